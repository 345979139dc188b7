"""The published benchmark colorswap: its manifest (bindlab/data_manifests/colorswap.json) as a task."""

from __future__ import annotations

from bindlab.tasks.base import register_task
from bindlab.tasks.published import PublishedTask

TASK = register_task(PublishedTask("colorswap", item_shape=(2, 2)))
