"""The published benchmark sugarcrepe: its manifest (bindlab/data_manifests/sugarcrepe.json) as a task."""

from __future__ import annotations

from bindlab.tasks.base import register_task
from bindlab.tasks.published import PublishedTask

TASK = register_task(PublishedTask("sugarcrepe", item_shape=(1, 1)))
