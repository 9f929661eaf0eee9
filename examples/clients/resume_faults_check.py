#!/usr/bin/env python3
"""Two resume servers on `--backend postgres+nats`, with PostgreSQL restarted and then
NATS restarted while their sessions run; then checks what the users see. Standard library
and the documented client (resume_client.py) only:

    python3 examples/clients/resume_faults_check.py BINARY WORKDIR [SESSIONS] [LATENCY_MS] [OUTAGE_S] [SERVERS]

Each server is down for OUTAGE_S seconds (default 1.5) between its stop and its start.
SERVERS `own` (the default): the servers run on a PostgreSQL and a NATS of this check's
own (initdb and nats-server on free ports, under WORKDIR), so restarting them disturbs
nothing else on the machine. `machine`: on the machine's own, at POSTGRES_URL and NATS_URL
(the defaults: 127.0.0.1:5432 database test, 127.0.0.1:4222): PostgreSQL is restarted
with `service postgresql stop` and `start`, NATS by stopping the nats-server process
listening there and starting it again with its own command line; whatever else uses them
sees them restart too.

Checks: every session completes; each session replayed from event 0 has ids 1, 2, 3, ...
and the events of an uninterrupted session, each once; the clients, reconnecting with
Last-Event-ID whenever their stream broke, saw every id once. Prints the figures; exits 0
when all hold, 1 otherwise.
"""
import glob
import http.client
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


client = load("resume_client")
restart_check = load("resume_restart_check")
serve, start, free_port = restart_check.serve, restart_check.start, restart_check.free_port

TERMINAL = ("session_complete", "session_failed", "session_cancelled", "session_expired")


def postgres_bin(name):
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/" + name))
    if not found:
        raise SystemExit("PostgreSQL's %s is not installed" % name)
    return found[-1]


def as_postgres(args):
    """Runs a PostgreSQL tool as the `postgres` user when this is root (initdb refuses
    root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + args
    return args


class Postgres:
    """A PostgreSQL server of this check's own, trust auth, on a free port."""

    def __init__(self, work):
        self.data = os.path.join(work, "pgdata")
        self.port = free_port()
        self.log = os.path.join(work, "postgres.log")
        os.makedirs(self.data, exist_ok=True)
        if os.geteuid() == 0:
            # The postgres user must reach its data directory (a test's temporary
            # directory is private to its owner).
            os.chmod(os.path.dirname(work), 0o755)
            shutil.chown(work, "postgres")
            shutil.chown(self.data, "postgres")
        subprocess.run(as_postgres([postgres_bin("initdb"), "-D", self.data, "-U", "postgres",
                                    "--auth=trust", "-E", "UTF8"]),
                       check=True, stdout=subprocess.DEVNULL)
        self.url = "postgres://postgres@127.0.0.1:%d/postgres" % self.port

    def ctl(self, *args):
        options = "-p %d -c listen_addresses=127.0.0.1 -k %s" % (self.port, self.data)
        subprocess.run(as_postgres([postgres_bin("pg_ctl"), "-D", self.data, "-l", self.log,
                                    "-o", options, "-w"] + list(args)),
                       check=True, stdout=subprocess.DEVNULL)

    def start(self):
        self.ctl("start")

    def restart(self, outage):
        self.ctl("stop", "-m", "fast")
        time.sleep(outage)
        self.start()

    def stop(self):
        self.ctl("stop", "-m", "immediate")


class Nats:
    """A NATS server with JetStream of this check's own, on a free port, its streams on
    disk under WORKDIR (so they outlive a restart)."""

    def __init__(self, work):
        self.store = os.path.join(work, "nats")
        self.port = free_port()
        self.log = os.path.join(work, "nats.log")
        self.url = "nats://127.0.0.1:%d" % self.port
        self.process = None

    def start(self):
        binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
        self.process = subprocess.Popen(
            [binary, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", self.store],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))
        restart_check_wait(self.port)

    def restart(self, outage):
        self.stop()
        time.sleep(outage)
        self.start()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()


class MachinePostgres:
    """The machine's PostgreSQL service, restarted with `service postgresql`."""

    def __init__(self):
        self.url = os.environ.get("POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
        self.port = urllib.parse.urlparse(self.url).port or 5432

    def start(self):
        subprocess.run(["service", "postgresql", "start"], check=True, stdout=subprocess.DEVNULL)
        restart_check_wait(self.port)

    def restart(self, outage):
        try:
            subprocess.run(["service", "postgresql", "stop"], check=True,
                           stdout=subprocess.DEVNULL)
            time.sleep(outage)
        finally:
            self.start()

    def stop(self):
        """Leaves it running (started again if a restart failed half-way)."""
        self.start()


class MachineNats:
    """The machine's nats-server listening at NATS_URL, stopped and started again with
    its own command line."""

    def __init__(self):
        self.url = os.environ.get("NATS_URL", "nats://127.0.0.1:4222")
        self.port = urllib.parse.urlparse(self.url).port or 4222
        self.command = None

    def process(self):
        """The pid and command line of the nats-server on this port."""
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    command = [a.decode() for a in f.read().split(b"\0")[:-1]]
            except OSError:
                continue
            if command and os.path.basename(command[0]) == "nats-server" and \
                    str(self.port) in command:
                return int(pid), command
        raise SystemExit("no nats-server process listens on port %d here" % self.port)

    def start(self):
        subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
        restart_check_wait(self.port)

    def restart(self, outage):
        pid, self.command = self.process()
        os.kill(pid, signal.SIGTERM)
        try:
            for _ in range(200):
                if not os.path.exists("/proc/%d" % pid):
                    break
                time.sleep(0.05)
            time.sleep(outage)
        finally:
            self.start()

    def stop(self):
        """Leaves it running."""


def restart_check_wait(port):
    import socket
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("a server did not start on port %d" % port)


class User:
    """One user's session, followed to its end on the instances in turn: it reconnects
    with the last id it saw whenever its stream breaks, and answers gates as they
    open."""

    def __init__(self, bases, session):
        self.bases, self.session = bases, session
        self.seen, self.outcome, self.reconnects = [], None, 0

    def answer(self, base, data):
        try:
            code, body = client.call("POST", base + "/api/resume/respond", self.session["token"], {
                "session_id": self.session["session_id"], "gate": data["gate_id"],
                "answer": client.answer_for(data["name"], data["payload"])})
        except (OSError, http.client.HTTPException):
            return False
        return code == 200 or (isinstance(body, dict) and body.get("error", {}).get("code") == "already_answered")

    def follow(self, deadline):
        turn = 0
        while time.time() < deadline and self.outcome is None:
            base = self.bases[turn % len(self.bases)]
            turn += 1
            last_id = self.seen[-1][0] if self.seen else 0
            try:
                for event_id, data in client.events(base, self.session["stream_url"],
                                                    self.session["token"], last_id):
                    self.seen.append((event_id, data))
                    kind = data.get("type")
                    if kind == "gate_open":
                        # Answered until taken: the store may be restarting.
                        while not self.answer(base, data) and time.time() < deadline:
                            time.sleep(0.5)
                    if kind in TERMINAL:
                        self.outcome = kind
                        return
            except (OSError, http.client.HTTPException, AssertionError, ValueError):
                pass
            self.reconnects += 1
            time.sleep(0.3)


def main():
    binary, work = sys.argv[1], sys.argv[2]
    sessions = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    latency = int(sys.argv[4]) if len(sys.argv) > 4 else 150
    outage = float(sys.argv[5]) if len(sys.argv) > 5 else 1.5
    machine = (sys.argv[6] if len(sys.argv) > 6 else "own") == "machine"
    os.makedirs(work, exist_ok=True)

    # An uninterrupted session on one SQLite process: the events every session must have.
    server, base = serve(binary, os.path.join(work, "plain.log"), latency,
                         ["--db", os.path.join(work, "plain.db")], {})
    plain = User([base], start(base))
    plain.follow(time.time() + 120)
    plain_kinds = [e.get("type") for _, e in client.events(base, plain.session["stream_url"],
                                                          plain.session["token"], 0)]
    server.terminate()
    server.wait()
    print("uninterrupted:", plain.outcome, len(plain_kinds), "events")

    if machine:
        postgres, nats = MachinePostgres(), MachineNats()
        nats.process()
    else:
        postgres, nats = Postgres(os.path.join(work, "pg")), Nats(work)
        postgres.start()
        nats.start()
    servers = []
    deployment = "faults_%s" % uuid.uuid4().hex[:8]
    try:
        backend = ["--backend", "postgres+nats", "--schema", deployment,
                   "--nats-prefix", deployment, "--lease-secs", "3"]
        env = {"DATABASE_URL": postgres.url, "NATS_URL": nats.url}
        logs = [os.path.join(work, name + ".log") for name in ("a", "b")]
        for log in logs:
            servers.append(serve(binary, log, latency, backend, env))
        return check(servers, logs, postgres, nats, sessions, outage, plain_kinds)
    finally:
        for process, _ in servers:
            if process.poll() is None:
                process.kill()
                process.wait()
        nats.stop()
        postgres.stop()
        if machine:
            # The deployment's tables go with their schema (its NATS streams stay, small).
            subprocess.run(["psql", postgres.url, "-q", "-c",
                            'DROP SCHEMA IF EXISTS "%s" CASCADE' % deployment],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def check(servers, logs, postgres, nats, sessions, outage, plain_kinds):
    bases = [b for _, b in servers]
    users = [User(bases[i % 2:] + bases[:i % 2], start(bases[i % 2])) for i in range(sessions)]
    deadline = time.time() + 240
    threads = [threading.Thread(target=u.follow, args=(deadline,), daemon=True) for u in users]
    for thread in threads:
        thread.start()

    time.sleep(2.0)
    began = time.time()
    postgres.restart(outage)
    print("PostgreSQL restarted in %.1f s" % (time.time() - began))
    time.sleep(2.0)
    began = time.time()
    nats.restart(outage)
    print("NATS restarted in %.1f s" % (time.time() - began))

    for thread in threads:
        thread.join(max(0.0, deadline - time.time()))
    finished_at = time.time()
    outcomes = [u.outcome for u in users]
    print("outcomes:", outcomes, "| reconnects:", [u.reconnects for u in users],
          "| finished %.1f s after the NATS restart" % (finished_at - began))

    replays = []
    for user in users:
        for attempt in range(20):
            try:
                replays.append(list(client.events(bases[0], user.session["stream_url"],
                                                  user.session["token"], 0)))
                break
            except (OSError, http.client.HTTPException):
                time.sleep(0.5)
        else:
            replays.append([])
    checks = {
        "every session completes": all(o == "session_complete" for o in outcomes),
        "replayed from 0, ids are 1, 2, 3, ... in every session":
            all([i for i, _ in r] == list(range(1, len(r) + 1)) for r in replays),
        "each session has the events of an uninterrupted one, each once":
            all([e.get("type") for _, e in r] == plain_kinds for r in replays),
        "the clients saw every id once":
            all([i for i, _ in u.seen] == list(range(1, len(u.seen) + 1)) for u in users),
    }
    for user, replay in zip(users, replays):
        kinds = [e.get("type") for _, e in replay]
        if kinds != plain_kinds:
            print("session", user.session["session_id"], "replays", len(kinds), "events:",
                  " ".join(k or "?" for k in kinds), file=sys.stderr)
    for name, ok in checks.items():
        print("ok  " if ok else "FAIL", name)
    if not all(checks.values()):
        for user in users:
            if user.outcome != "session_complete":
                last = [e.get("type") for _, e in user.seen[-5:]]
                print("session", user.session["session_id"], "ended", user.outcome,
                      "after", len(user.seen), "events; last:", last)
        for log in logs:
            with open(log) as lines:
                trouble = [l.rstrip() for l in lines if " WARN " in l or " ERROR " in l]
            print(os.path.basename(log), "warnings and errors:", *trouble[-25:], sep="\n  ")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
