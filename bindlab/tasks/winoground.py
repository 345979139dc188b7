"""The published benchmark winoground: its manifest (bindlab/data_manifests/winoground.json) as a task."""

from __future__ import annotations

from bindlab.tasks.base import register_task
from bindlab.tasks.published import PublishedTask

TASK = register_task(PublishedTask("winoground", item_shape=(2, 2)))
