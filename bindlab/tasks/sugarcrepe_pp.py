"""The published benchmark sugarcrepe_pp (image-to-text, or text-only for a text encoder): its manifest (bindlab/data_manifests/sugarcrepe_pp.json) as a task."""

from __future__ import annotations

from bindlab.tasks.base import register_task
from bindlab.tasks.published import PublishedTask

TASK = register_task(PublishedTask("sugarcrepe_pp", item_shape=(2, 1), modalities=frozenset({"text"})))
