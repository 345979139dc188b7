"""The Gradio app: one module per tab; :mod:`bindlab.ui.app` builds and launches it.

Importing this package first makes ``import gradio`` skip two things Gradio does on import that the app never uses
(:mod:`bindlab.ui.gradio_import`): about 3 of its 7.6 seconds on a 2-core machine.
"""

from bindlab.ui.gradio_import import fast_gradio_import

fast_gradio_import()
