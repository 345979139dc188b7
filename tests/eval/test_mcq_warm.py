"""A warm MCQ run (every vector and unknown-word list cached) loads no model, tokenizer, torch or transformers, and
gives the cold run's result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap


def test_a_warm_run_loads_nothing_and_matches_the_cold_run(small_benchmark, tmp_path):
    path, _ = small_benchmark  # 54 questions, 270 captions
    env = {**os.environ, "BINDLAB_HOME": str(tmp_path / "home")}
    script = textwrap.dedent(f"""
        import json, sys
        import bindlab
        res = bindlab.evaluate_mcq("minilm", data={str(path)!r}, progress=False)
        print(json.dumps({{"accuracy": res.primary, "unknown": res.summary["unknown_words"],
                          "scores": [r["scores"] for r in res.rows],
                          "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules}}))
    """)

    def run() -> dict:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold, warm = run(), run()
    assert cold["torch"] and cold["transformers"]  # the cold run embeds, so it does load the model
    assert not warm["torch"] and not warm["transformers"]
    assert warm["accuracy"] == cold["accuracy"] and warm["scores"] == cold["scores"]
    assert warm["unknown"] == cold["unknown"] and warm["unknown"]["n_words"] > 0
