"""Progress where output is not a terminal (issue 18: cluster logs, nohup): one line per stage
event with counts, rate and ETA, at most every PROGRESS_LINE_SECONDS and at each tenth of the
stage; the stage's name and place on the bar and on every line."""

from __future__ import annotations

import io
import re

from babelprobe.families.cka.config import CKAConfig
from babelprobe.models.base import Tokenize
from babelprobe.execute_run import run
from babelprobe.request_runner import LineProgress, Runner


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_every_tenth_and_every_interval():
    stream, clock = io.StringIO(), Clock()
    lines = LineProgress("answer 1/2", 100, stream, every_seconds=30, clock=clock)
    for _ in range(25):  # 2 requests per second
        clock.now += 1
        lines.advance(2)
    lines.close()
    text = stream.getvalue().splitlines()
    assert text[0] == "[answer 1/2] 100 requests to compute"
    # one line at each 10 requests (a tenth), none in between
    assert text[1] == "[answer 1/2] 10/100 requests (10%), 2.0/s, ETA 45s"
    assert [t.split()[2] for t in text[1:-1]] == ["10/100", "20/100", "30/100", "40/100", "50/100"]
    assert text[-1] == "[answer 1/2] done: 50/100 requests in 25s (2.0/s)"
    # a slow stage: a line every 30 s although no tenth is crossed
    stream, clock = io.StringIO(), Clock()
    slow = LineProgress("judge 2/2 m", 10_000, stream, every_seconds=30, clock=clock)
    for _ in range(3):
        clock.now += 31
        slow.advance(1)
    assert len(stream.getvalue().splitlines()) == 4
    assert "3/10000 requests (0%), 1.9/min, ETA 86h" in stream.getvalue()


def test_runner_writes_lines_to_a_stream_that_is_no_terminal(gemma):
    stream = io.StringIO()
    runner = Runner(gemma, batch_size=2, progress=True, label="tokenize 1/3", progress_stream=stream)
    outcomes = runner.run(Tokenize(text=f"sentence number {i}") for i in range(20))
    assert len(outcomes) == 20 and all(o.error is None for o in outcomes.values())
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[tokenize 1/3] 20 requests to compute"
    assert re.fullmatch(r"\[tokenize 1/3\] 2/20 requests \(10%\), [0-9.]+/s, ETA \d+s", lines[1]), lines
    assert lines[-1].startswith("[tokenize 1/3] done: 20/20 requests in ")


def test_a_run_names_its_stages_in_the_log(gemma, tmp_path, capsys):
    """`run` with output captured (as under nohup): stage name and place on each line."""
    config = CKAConfig(langs=["en"], limit=2, bootstrap_resamples=100, out=tmp_path / "run", cache=None)
    run(config, backends={config.model: gemma}, progress=True)
    err = capsys.readouterr().err
    assert re.search(r"^\[answer 1/1\] \d+ requests to compute$", err, re.M), err
    assert re.search(r"^\[answer 1/1\] done: ", err, re.M), err


def test_a_line_at_least_every_interval_while_a_batch_is_still_running():
    """Issue 30: "30 requests to compute", then nothing for 2 min 9 s: lines were written only when
    a batch finished. The timer's tick writes one when none was written for the interval, with what
    is done, the time so far, the rate and the ETA; and never more often."""
    stream, clock = io.StringIO(), Clock()
    lines = LineProgress("answer 1/2", 30, stream, every_seconds=30, clock=clock)
    clock.now += 10
    lines.tick()  # too soon: nothing
    assert len(stream.getvalue().splitlines()) == 1
    clock.now += 25  # 35 s into the first batch
    lines.tick()
    assert stream.getvalue().splitlines()[-1] == ("[answer 1/2] 0/30 requests (0%), still computing, 35s elapsed, "
                                                  "0.0/s, ETA unknown until a batch finishes")
    lines.tick()  # the same moment: no second line
    clock.now += 95  # the first batch (8 requests) ends at 130 s
    lines.advance(8)
    clock.now += 31
    lines.tick()
    assert stream.getvalue().splitlines()[-1] == ("[answer 1/2] 8/30 requests (27%), still computing, 2m41s elapsed, "
                                                  "3.0/min, ETA 7m23s")
    assert len(stream.getvalue().splitlines()) == 4


def test_the_timer_thread_starts_and_stops_with_the_stage():
    stream = io.StringIO()
    lines = LineProgress("answer 1/1", 4, stream)
    lines.start_timer()
    assert lines._timer is not None and lines._timer.is_alive()
    lines.advance(4)
    lines.close()
    assert not lines._timer.is_alive()
    assert stream.getvalue().splitlines()[-1].startswith("[answer 1/1] done: 4/4 requests in ")
