"""A problem page says what is judged: each profile's W, shape, dtype and whether the CPU shapes are reduced (as the
runner asks the judge: jobs/runner.py), the Output row and "Speed of light" as sentences; a feedback run on a CPU
profile never reads in GPU-seconds."""

import html as html_lib
import re

from evaluator.contract import feedback_text
from leaderboard.jobs import judge_requests


def page(client, profile="cpu-gloo"):
    return html_lib.unescape(client.get(f"/problems/1_allreduce/?profile={profile}").content.decode())


def judged_line(text: str, name: str) -> str:
    block = text.split('id="judged-at"')[1].split("</dd>")[0]
    return re.sub(r"<[^>]+>", "", next(li for li in block.split("<li>") if name in li))


def test_each_profile_states_its_w_shape_dtype_and_reduction(client, cpu, gpu):
    text = page(client)
    cpu_line, gpu_line = judged_line(text, cpu.name), judged_line(text, gpu.name)
    assert f"W = {cpu.world_size}, M = 1024, N = 1024, bfloat16 inputs, reduced" in cpu_line
    assert f"W = {gpu.world_size}, M = 1024, N = 1024, bfloat16 inputs, the specification's full sizes" in gpu_line
    assert "a shape the judge draws" in gpu_line and "a shape the judge draws" not in cpu_line
    assert judge_requests.reduced_for(cpu) and not judge_requests.reduced_for(gpu)  # what the runner asks


def test_output_and_speed_of_light_read_as_sentences(client, cpu):
    text = page(client)
    output = re.sub(r"<[^>]+>", "", text.split('id="output">')[1].split("</dd>")[0])
    assert output == "Each rank returns D, a tensor of shape (M, N): all W(W+1)/2 on every rank."
    light = re.sub(r"<[^>]+>", "", text.split('id="light">')[1].split("</dd>")[0])
    assert "None at W" not in light and (light.startswith(f"No floor at W = {cpu.world_size}: ") or "moved" in light)
    assert ".." not in light


def test_a_cpu_feedback_run_never_says_gpu_seconds():
    run = {"verdict": "correct", "device": "cpu", "world_size": 2, "metering": {"wall_s": 2.5, "gpu_seconds": 0.0}}
    cpu_text = feedback_text.text(run)
    assert "GPU-seconds" not in cpu_text and "rank-seconds 5.0" in cpu_text
    gpu_text = feedback_text.text(dict(run, device="cuda", metering={"wall_s": 2.5, "gpu_seconds": 20.0}))
    assert "GPU-seconds 20.0" in gpu_text
