#!/usr/bin/env python3
"""Two resume servers on one PostgreSQL and one NATS (`--backend postgres+nats`): a
session started on one is streamed from the other and its gates are answered on either;
the instance running it is killed with SIGKILL in the middle of the Craftsman stage, and
the survivor finishes it. Standard library and the documented client (resume_client.py)
only:

    python3 examples/clients/resume_instances_check.py BINARY WORKDIR DATABASE_URL NATS_URL
        [LATENCY_MS] [KILL_AFTER_S]

Checks: the session completes; the model calls of both instances add up to those of an
uninterrupted session (at most the one in flight at the kill repeated); a client that
reconnects to the survivor with Last-Event-ID sees every event once, ids 1, 2, 3, ...;
replayed from event 0 the session has the events of an uninterrupted one. Prints the
figures; exits 0 when all hold, 1 otherwise.
"""
import http.client
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


client = load("resume_client")
# One way to start a dry-run server, start a session and count model calls.
restart_check = load("resume_restart_check")
serve, start, model_calls = restart_check.serve, restart_check.start, restart_check.model_calls

LEASE_SECS = 3


def answer(bases, session, data, turn):
    """Answers a gate on one instance or the other, in turn."""
    base = bases[turn % len(bases)]
    code, body = client.call("POST", base + "/api/resume/respond", session["token"], {
        "session_id": session["session_id"], "gate": data["gate_id"],
        "answer": client.answer_for(data["name"], data["payload"])})
    assert code == 200 or body["error"]["code"] == "already_answered", (base, code, body)


def follow(stream_base, answer_bases, session, seen, until=None):
    """Follows the session on `stream_base` from the last event seen, answering gates on
    `answer_bases` in turn; appends (id, event) to `seen`. Returns how it stopped."""
    last_id = seen[-1][0] if seen else 0
    try:
        for event_id, data in client.events(stream_base, session["stream_url"], session["token"], last_id):
            seen.append((event_id, data))
            kind = data.get("type")
            if kind == "gate_open":
                answer(answer_bases, session, data, len(seen))
            if kind in ("session_complete", "session_failed", "session_cancelled", "session_expired"):
                return kind
            if until and until(data):
                return "until"
    except (OSError, http.client.HTTPException) as error:  # the instance died under the stream
        print("stream from", stream_base, "broke:", type(error).__name__, file=sys.stderr)
        return "disconnected"
    return "ended"


def main():
    binary, work, database, nats = sys.argv[1:5]
    latency = int(sys.argv[5]) if len(sys.argv) > 5 else 150
    kill_after = float(sys.argv[6]) if len(sys.argv) > 6 else 1.2
    os.makedirs(work, exist_ok=True)

    # An uninterrupted session on one SQLite process, for the figures to compare with.
    plain_log = os.path.join(work, "plain.log")
    server, base = serve(binary, plain_log, latency, ["--db", os.path.join(work, "plain.db")], {})
    plain = start(base)
    plain_seen = []
    outcome = follow(base, [base], plain, plain_seen)
    server.terminate()
    server.wait()
    plain_calls = model_calls(plain_log)
    plain_kinds = [e.get("type") for _, e in plain_seen]
    print("uninterrupted:", outcome, plain_calls, "model calls,", len(plain_seen), "events")

    # Two instances of one deployment, in a schema and under a NATS prefix of its own,
    # removed at the end.
    deployment = "instances_check_%s" % uuid.uuid4().hex[:10]
    try:
        return check(binary, work, database, nats, latency, kill_after, deployment,
                     plain_calls, plain_kinds)
    finally:
        remove_deployment(database, nats, deployment)


def remove_deployment(database, nats, deployment):
    """Drops the deployment's schema (with psql, when at hand) and deletes its JetStream
    streams (the JetStream API over the NATS text protocol)."""
    if shutil.which("psql"):
        subprocess.run(["psql", database, "-qc", "DROP SCHEMA IF EXISTS %s CASCADE" % deployment],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    host, _, port = nats.split("://", 1)[-1].partition(":")
    try:
        with socket.create_connection((host, int(port or 4222)), timeout=5) as conn:
            conn.recv(4096)  # INFO
            commands = "CONNECT {\"verbose\":false}\r\n"
            for suffix in ("RUNS", "DEAD"):
                commands += "PUB $JS.API.STREAM.DELETE.%s_%s 0\r\n\r\n" % (deployment.upper(), suffix)
            conn.sendall((commands + "PING\r\n").encode())
            conn.recv(4096)  # PONG
    except OSError as error:
        print("the NATS streams were not deleted:", error, file=sys.stderr)


def check(binary, work, database, nats, latency, kill_after, deployment, plain_calls, plain_kinds):
    backend = ["--backend", "postgres+nats", "--schema", deployment,
               "--nats-prefix", deployment, "--lease-secs", str(LEASE_SECS)]
    env = {"DATABASE_URL": database, "NATS_URL": nats}
    logs = [os.path.join(work, "a.log"), os.path.join(work, "b.log")]
    servers = []
    try:
        for log in logs:
            servers.append(serve(binary, log, latency, backend, env))
        return run_and_kill(servers, logs, session_start=start, kill_after=kill_after,
                            plain_calls=plain_calls, plain_kinds=plain_kinds)
    finally:
        for process, _ in servers:
            if process.poll() is None:
                process.kill()
                process.wait()


def run_and_kill(servers, logs, session_start, kill_after, plain_calls, plain_kinds):
    bases = [b for _, b in servers]

    session = session_start(bases[0])
    seen = []
    # Streamed from b, answered on a and b in turn, until the writing stage has begun.
    follow(bases[1], bases, session, seen,
           lambda e: e.get("type") == "stage_start" and e.get("stage") == "writing")
    time.sleep(kill_after)
    calls = [model_calls(log) for log in logs]
    running = 0 if calls[0] >= calls[1] else 1
    print("running on instance", "ab"[running], "| model calls so far:", calls)
    os.kill(servers[running][0].pid, signal.SIGKILL)
    servers[running][0].wait()
    killed_at = time.time()
    survivor = bases[1 - running]

    # The client reconnects to the survivor with the last id it saw.
    outcome = "disconnected"
    while outcome in ("disconnected", "ended"):
        outcome = follow(survivor, [survivor], session, seen)
        if time.time() - killed_at > 120:
            break
        if outcome in ("disconnected", "ended"):
            time.sleep(0.2)
    took_over = time.time() - killed_at
    replay = list(client.events(survivor, session["stream_url"], session["token"], 0))
    for process, _ in servers:
        if process.poll() is None:
            process.terminate()
            process.wait()

    ids = [event_id for event_id, _ in seen]
    stages = [e["stage"] for _, e in replay if e.get("type") == "stage_start"]
    total = sum(model_calls(log) for log in logs)
    print("outcome:", outcome, "| finished %.1f s after the kill" % took_over,
          "| events seen:", len(ids), "| replayed:", len(replay))
    print("model calls: %s = %d (uninterrupted: %d)"
          % (" + ".join(str(model_calls(log)) for log in logs), total, plain_calls))
    checks = {
        "the session completes": outcome == "session_complete",
        "the client saw ids 1, 2, 3, ... each once": ids == list(range(1, len(ids) + 1)),
        "the replay has the events of an uninterrupted session":
            [e.get("type") for _, e in replay] == plain_kinds,
        "no stage started twice": len(stages) == len(set(stages)),
        "the kill came inside the run": calls[running] > 0 and total > calls[running],
        "at most one model call repeated": plain_calls <= total <= plain_calls + 1,
    }
    for name, ok in checks.items():
        print("ok  " if ok else "FAIL", name)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
