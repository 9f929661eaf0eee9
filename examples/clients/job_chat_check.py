"""The official `openai` Python client against the job-agent chat (issue 15's check).

    pip install openai
    cargo run -p examples --example job_agent_chat -- serve --dry-run --port 8090 &
    python3 examples/clients/job_chat_check.py http://127.0.0.1:8090/v1

Reads /v1/models, then has the recorded four-turn conversation twice: once whole
(non-streaming), resending the history as chat clients do; once streamed with
`stream_options={"include_usage": True}`, sending only the newest message and naming the
conversation by header, as a client that keeps no history does. Checks every answer and
the stream's shape; exits 1 on the first failure.
"""

import sys

from openai import APIStatusError, OpenAI

TURNS = [
    ("Find Rust backend engineer jobs in Berlin", "I found 4 jobs"),
    (
        "I know Rust, PostgreSQL and Kafka, I want a backend engineer role in Berlin, "
        "at least 70000 EUR a year. My email is ada@example.com",
        "Your profile is saved",
    ),
    ("Save the Tidewater and Kestrel jobs and rank my saved jobs", "Ranked against your profile"),
    ("Prepare an application for the Tidewater job", "Cover letter"),
]


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}")
        sys.exit(1)


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8090/v1"
    key = sys.argv[2] if len(sys.argv) > 2 else "local"
    client = OpenAI(base_url=base, api_key=key, max_retries=0, timeout=120)

    models = [m.id for m in client.models.list().data]
    check("job-agent" in models, f"/v1/models lists job-agent ({models})")
    print(f"models: {models}")

    # Whole answers, the history resent every turn.
    history = []
    for said, expected in TURNS:
        history.append({"role": "user", "content": said})
        answer = client.chat.completions.create(model="job-agent", messages=history, user="ada-whole")
        text = answer.choices[0].message.content
        check(expected in text, f"whole answer to {said!r} says {expected!r}: {text!r}")
        check(answer.choices[0].finish_reason == "stop", "finish_reason stop")
        check(answer.usage.total_tokens > 0, "usage counted")
        history.append({"role": "assistant", "content": text})
        print(f"whole  | {said[:40]:40} -> {text.splitlines()[0][:60]}")

    # Streamed, only the newest message sent; the server keeps the conversation.
    for said, expected in TURNS:
        stream = client.chat.completions.create(
            model="job-agent",
            messages=[{"role": "user", "content": said}],
            stream=True,
            stream_options={"include_usage": True},
            user="ada-streamed",
            extra_headers={"X-Conversation-Id": "streamed-1"},
        )
        ids, text, finish, usage, chunks = set(), "", None, None, 0
        for chunk in stream:
            chunks += 1
            ids.add((chunk.id, chunk.created))
            if chunk.choices:
                delta = chunk.choices[0].delta
                if chunks == 1:
                    check(delta.role == "assistant", "the first delta has role assistant")
                text += delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
            else:
                usage = chunk.usage
        check(len(ids) == 1, "one id and created for every chunk")
        check(expected in text, f"streamed answer to {said!r} says {expected!r}: {text!r}")
        check(text.startswith("> routed to"), "progress is shown as text")
        check(finish == "stop", "finish_reason on the last choice chunk")
        check(usage is not None and usage.total_tokens > 0, "a usage chunk at the end")
        print(f"stream | {said[:40]:40} -> {chunks} chunks, {usage.total_tokens} tokens")

    try:
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "hi"}])
        check(False, "an unknown model is refused")
    except APIStatusError as error:
        check(error.status_code == 404, f"unknown model is 404 ({error.status_code})")
        print(f"unknown model -> {error.status_code} {error.body.get('code') if isinstance(error.body, dict) else error.body}")

    print("ok: the openai client completed both conversations")


if __name__ == "__main__":
    main()
