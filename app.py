"""Start the bindlab app: ``python app.py`` (local: http://127.0.0.1:7860; a Space's host/port env is honoured)."""

from bindlab.ui.app import launch

if __name__ == "__main__":
    launch()
