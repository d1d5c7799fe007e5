"""The README: under 12,000 bytes, its example runs, its results table quotes the results page, its links resolve,
and it speaks about hybridai, not about how it was made."""

import io
import pathlib
import re
from contextlib import redirect_stdout

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?")


def test_the_readme_is_short():
    assert len(README.encode()) < 12_000


def test_the_readme_example_trains_three_domains_and_moves_the_circuit():
    code = README.split("```python", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), namespace)
    history, model = namespace["history"], namespace["model"]
    assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"]
    assert model[2].backend == "aer:fake_manila"
    assert "4 classical, 1 quantum, 3 spiking" in printed.getvalue()


def results_rows():
    section = README.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return rows[2:]  # after the header and its separator


def test_each_number_of_the_results_table_is_on_the_results_page():
    results = (ROOT / "docs" / "results.md").read_text()
    rows = results_rows()
    assert len(rows) >= 6 and all(row.count("|") == 5 for row in rows)
    for row in rows:
        what, against, command, cpu = (cell.strip() for cell in row.strip("|").split("|"))
        assert re.search(r"\d+(\.\d+)?x ", against), row  # a ratio, against a named peer
        script = command.strip("`").split()[1]
        assert command.startswith("`python benchmarks/") and (ROOT / script).is_file(), row
        section = results.split(f"\n## {script}\n", 1)[1].split("\n## benchmarks/", 1)[0]
        cores, model = re.fullmatch(r"(\d+)-core (.+)", cpu).groups()
        assert f"{cores} cores, CPU: {model}" in section.replace("(R)", ""), f"{cpu}: not the CPU of {script}'s runs"
        for number in NUMBER.findall(row):
            assert re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", results), f"{number} in {row}"
    assert "8.2x PennyLane default.qubit" in README  # the table is read (a broken split would check nothing)


def test_every_relative_link_points_to_an_existing_file():
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    relative = [link.split("#", 1)[0] for link in links if not re.match(r"[a-z]+:|#", link)]
    assert len(relative) >= 15
    missing = [link for link in relative if not (ROOT / link).is_file()]
    assert not missing, missing


def test_the_readme_speaks_about_hybridai_not_its_making():
    assert not re.search(r"\b(issues?|sessions?|earlier|closing note)\b", README, flags=re.IGNORECASE)


def test_the_readme_commands_are_the_makefile_targets():
    makefile = (ROOT / "Makefile").read_text()
    assert "make demo" in README and "make test" in README and "make check" in README
    assert "\ndemo: $(STAMP)" in makefile and "\ntest: $(STAMP)" in makefile and "\ncheck: $(STAMP)" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()
