"""bindlab.ui.gradio_import: the faster ``import gradio`` skips stub rewriting and keeps IPython out, and only that.

Each check runs in a fresh interpreter: what is measured is what a process sees on its first ``import gradio``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from bindlab.config import repo_root


def _run(code: str, cwd: str | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd or repo_root(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_importing_bindlab_ui_first_skips_stubs_and_ipython(tmp_path):
    # a component class defined after the import writes no stub next to its module, and no notebook check loads
    # IPython; the component still works
    (tmp_path / "mycomp.py").write_text("import gradio as gr\n\n\nclass MyBox(gr.Textbox):\n    pass\n")
    out = _run(
        f"""
        import sys
        sys.path.insert(0, {str(repo_root())!r})
        import bindlab.ui
        import gradio as gr
        from gradio import component_meta, utils, workflow
        import mycomp
        box = mycomp.MyBox(value="x")
        print(component_meta.create_or_modify_pyi.__name__, "IPython" in sys.modules,
              utils.colab_check(), utils.ipython_check(), workflow.colab_check(), "IPython" in sys.modules,
              box.value)
    """,
        cwd=str(tmp_path),
    )
    assert out == "_no_stub False False False False False x"
    assert not (tmp_path / "mycomp.pyi").exists()


def test_a_notebook_keeps_its_ipython_magic_and_checks():
    # IPython already loaded (a notebook): the %%blocks magic is defined and the checks ask IPython as before
    out = _run("""
        import IPython
        import bindlab.ui
        import gradio
        from gradio import ipython_ext, utils
        print(hasattr(ipython_ext, "register_cell_magic"), utils.ipython_check(), "IPython" in __import__("sys").modules)
    """)
    assert out == "True False True"  # ipython_check: IPython is loaded but no shell is running in `python -c`


def test_gradio_imported_before_bindlab_still_gets_no_stubs(tmp_path):
    (tmp_path / "mycomp.py").write_text("import gradio as gr\n\n\nclass MyBox(gr.Textbox):\n    pass\n")
    out = _run(
        f"""
        import sys
        sys.path.insert(0, {str(repo_root())!r})
        import gradio
        import bindlab.ui
        import mycomp
        from gradio import component_meta
        print(component_meta.create_or_modify_pyi.__name__)
    """,
        cwd=str(tmp_path),
    )
    assert out == "_no_stub"
    assert not (tmp_path / "mycomp.pyi").exists()


def test_without_bindlab_gradio_writes_its_stub(tmp_path):
    # the control: the stub writer is Gradio's own behaviour, so the tests above test the switch, not an absence
    (tmp_path / "mycomp.py").write_text("import gradio as gr\n\n\nclass MyBox(gr.Textbox):\n    pass\n")
    _run("import gradio\nimport mycomp\n", cwd=str(tmp_path))
    assert (tmp_path / "mycomp.pyi").exists()
