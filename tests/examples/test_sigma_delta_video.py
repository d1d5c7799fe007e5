"""The sigma-delta video example on a small data set: the chip follows the float network, activity falls as
frames change less, and a still scene sends nothing after its first frame."""

import torch

from tests.examples import load_example


def test_sigma_delta_video_example(tmp_path, capsys):
    threads = torch.get_num_threads()
    out = load_example("sigma_delta_video").main(
        ["--videos", "160", "--frames", "10", "--epochs", "6", "--out", str(tmp_path)]
    )
    assert torch.get_num_threads() == threads  # restored
    # speed -> (speed, dense, float, chip, lif, messages, synops, LIF synops, first frame)
    rows = {row[0]: row for row in out["rows"]}
    for _, dense, flt, chip, lif, *_ in rows.values():
        assert dense > 0.4 and chip > 0.4 and lif > 0.3  # four classes: chance is 0.25
        assert abs(chip - flt) < 0.05  # the 8-bit chip follows the float sigma-delta network
    synops = [rows[speed][6] for speed in (1.0, 0.25, 0.0)]
    assert synops[0] > synops[1] > synops[2] == 0  # less change, fewer events; a still scene sends nothing
    assert rows[1.0][6] < out["dense_macs"] / 4  # sigma-delta: far fewer events than the dense network's MACs
    assert rows[1.0][7] > out["dense_macs"]  # rate-coded LIF: more
    assert rows[0.0][8][0] > 0  # the first frame is sent whole
    assert out["report"].run.latency_steps == 2
    assert out["png"].stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "no public per-event figures for 'loihi2'" in printed and "syn. ops saved vs dense" in printed
