"""The ZNE training example: like-for-like noisy students, the error against the ideal value, one PNG in --out."""

import torch

from tests.examples import load_example


def test_zne_training_example_mitigates_and_writes_into_a_new_folder(tmp_path, capsys):
    threads = torch.get_num_threads()
    try:
        with torch.random.fork_rng():  # the script seeds the global RNG, as scripts do
            out = load_example("zne_training").main(["--steps", "2", "--out", str(tmp_path / "new" / "dir")])
    finally:
        torch.set_num_threads(threads)
    # the same weights, noisy against noisy + ZNE: mitigation brings the values closer to the ideal ones
    assert out["error_zne"] < out["error_noisy"] / 5
    names = [row[0] for row in out["rows"]]
    assert names == ["ideal (statevector)", "noisy (density:fake_manila)", "noisy + ZNE (Richardson 1,3,5)"]
    assert out["backend"] == "density:fake_manila"  # the default route
    assert all(len(curve) == 2 for curve in out["curves"].values())
    assert out["png"] == tmp_path / "new" / "dir" / "zne_training.png" and out["png"].stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "error against the ideal value" in printed and printed.count("| noisy") == 2
    assert "noisy students on density:fake_manila" in printed


def test_the_aer_route_sets_up_the_same_noisy_students_on_aer():
    module = load_example("zne_training")
    density, aer = module.noisy_options("density"), module.noisy_options("aer")
    assert aer == {**density, "backend": "aer:fake_manila"} and density["backend"] == "density:fake_manila"
