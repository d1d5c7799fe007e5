"""The README's example runs as written and its summary names the re-targeted backend."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    code = text.split("```python", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "pennylane:lightning.qubit" in out and "4 qubits" in out
    assert namespace["logits"].shape == (32, 10)


def test_readme_commands_are_the_makefile_targets():
    text = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "make demo" in text and "make test" in text
    assert "\ndemo: $(STAMP)" in makefile and "\ntest: $(STAMP)" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()
