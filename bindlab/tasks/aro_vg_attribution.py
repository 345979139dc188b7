"""The published benchmark aro_vg_attribution: its manifest (bindlab/data_manifests/aro_vg_attribution.json) as a task."""

from __future__ import annotations

from bindlab.tasks.base import register_task
from bindlab.tasks.published import PublishedTask

TASK = register_task(PublishedTask("aro_vg_attribution", item_shape=(1, 1)))
