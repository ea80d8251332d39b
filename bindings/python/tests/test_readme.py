"""The README's Python example runs as written, again and again on the same store."""

import os
import re
import subprocess
import sys

from conftest import BINDINGS_DIR, REPO_ROOT

import parley


def readme_example():
    """The python block of the README's "Using the library from Python" section."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Using the library from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "expected one python block in the README's Python section"
    return blocks[0]


def test_the_readme_example_runs_on_a_growing_conversation(model_path, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    (tmp_path / "model.gguf").symlink_to(model_path)  # the name the example opens
    env = dict(os.environ, PYTHONPATH=str(BINDINGS_DIR))
    # Each run adds two exchanges to the stored conversation, and the context fills on the
    # third: it must then give way rather than fail.
    for run in range(4):
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, "run %d: %s" % (run + 1, done.stderr)
        assert done.stdout.strip()
    with parley.Engine(tmp_path / "model.gguf", store=tmp_path / "chats.sqlite") as e:
        with e.open_session("story") as chat:
            assert chat.overflow == "drop_oldest"
            assert chat.turns[0] == ("system", "You are terse.")
            assert chat.turns[-2][1] == "And then?"
