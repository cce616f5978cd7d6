"""`bertology demo` runs end to end and prints real numbers."""
from bertology.cli import main


def test_demo_runs(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "11,683,584" in out and "109,482,240" in out  # albert-base and bert-base backbones
    assert "[CLS] the quick brown fox" in out and "sop_logits (1, 18, 2)" not in out
    sims = [line for line in out.splitlines() if line.strip().startswith("A man is playing")]
    values = [float(v) for v in sims[0].split()[-3:]]
    assert values[0] > 0.99 and values[1] > 0.5 > values[2]  # paraphrase close, unrelated far
