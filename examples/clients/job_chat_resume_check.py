"""The official `openai` Python client gives the job-agent chat a resume (issue 25's check).

    pip install openai
    cargo run -p examples --example job_agent_chat -- serve --dry-run --port 8090 &
    python3 examples/clients/job_chat_resume_check.py http://127.0.0.1:8090/v1 resume.pdf

Sends the PDF as a `file` content part (base64 `file_data`, the way the client sends a
file) as one user, then asks to see the profile as that user and as another. Checks that
the first user's profile holds the skills the answer says were read, and that the other
user's conversation does not reach them; exits 1 on the first failure.
"""

import base64
import os
import re
import sys

from openai import OpenAI


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}")
        sys.exit(1)


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8090/v1"
    path = sys.argv[2]
    client = OpenAI(base_url=base, api_key="local", max_retries=0, timeout=120)
    with open(path, "rb") as pdf:
        data = base64.b64encode(pdf.read()).decode()
    name = os.path.basename(path)
    sent = client.chat.completions.create(
        model="job-agent",
        user="resume-owner",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Here is my resume"},
                    {
                        "type": "file",
                        "file": {"filename": name, "file_data": f"data:application/pdf;base64,{data}"},
                    },
                ],
            }
        ],
    )
    text = sent.choices[0].message.content
    print(f"sent   | {text.splitlines()[0][:100]}")
    read = re.search(r"was read into your profile: (?:[^;]*; )?skills ([^\n]*)\.", text)
    check(read is not None, f"the answer says the file was read: {text!r}")
    skills = [s.strip() for s in read.group(1).split(",") if s.strip()]
    check(skills, "the resume's skills are named")

    mine = client.chat.completions.create(
        model="job-agent", user="resume-owner", messages=[{"role": "user", "content": "show my profile"}]
    ).choices[0].message.content
    print(f"owner  | {mine[:100]}")
    check(skills[0] in mine, f"the owner's profile holds {skills[0]!r}: {mine!r}")

    other = client.chat.completions.create(
        model="job-agent", user="someone-else", messages=[{"role": "user", "content": "show my profile"}]
    ).choices[0].message.content
    print(f"other  | {other[:100]}")
    check(skills[0] not in other and "skills: none" in other, f"another user sees none of it: {other!r}")
    print(f"ok: the resume's {len(skills)} skills are in its owner's profile only")


if __name__ == "__main__":
    main()
