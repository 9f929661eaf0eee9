#!/usr/bin/env python3
"""A client of the resume API written from docs/resume-api.md alone, with the standard
library only: start a session, follow its events, answer every gate, save the DOCX, and
check that the DOCX keeps the resume's name, its dated lines (roles, degrees) in order,
as section 6 says.

    python3 examples/clients/resume_client.py http://127.0.0.1:8080 RESUME.txt JOB.txt OUT.docx

Exits 0 when the resume is done, saved and checked, 1 otherwise.
"""
import base64
import io
import json
import re
import sys
import urllib.error
import urllib.request
import zipfile
import xml.etree.ElementTree as ElementTree

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def call(method, url, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def events(base, stream_url, token, last_id):
    """Yields (id, data) from the SSE stream, starting after last_id."""
    request = urllib.request.Request(base + stream_url + "?token=" + token)
    request.add_header("Accept", "text/event-stream")
    if last_id:
        request.add_header("Last-Event-ID", str(last_id))
    with urllib.request.urlopen(request, timeout=120) as response:
        event_id, data = None, []
        for raw in response:
            line = raw.decode("utf-8").rstrip("\n").rstrip("\r")
            if line == "":
                if data:
                    yield int(event_id), json.loads("\n".join(data))
                event_id, data = None, []
            elif line.startswith(":"):
                continue
            elif line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))


def answer_for(name, payload):
    """The answer to a gate, by its name, per the table of section 3."""
    if name.startswith("questionnaire_"):
        return {"answers": {q["id"]: "Yes: I led that work myself, in production, for two years."
                            for q in payload["questions"]}}
    if name.startswith("positioning_q_"):
        return {"answer": "I cut the p99 latency of our payments API from 800 ms to 120 ms."}
    if name in ("research_validation", "architect_review"):
        return {"approved": True}
    if name.startswith("section_review_"):
        return {"action": "approve"}
    if name == "quality_review":
        return {"approved": True}
    raise SystemExit("unknown gate " + name)


def docx_paragraphs(docx):
    """(style, text) of each paragraph of the DOCX body, in order."""
    with zipfile.ZipFile(io.BytesIO(docx)) as archive:
        body = ElementTree.fromstring(archive.read("word/document.xml"))
    paragraphs = []
    for paragraph in body.iter(W + "p"):
        style = paragraph.find(W + "pPr/" + W + "pStyle")
        text = "".join(t.text or "" for t in paragraph.iter(W + "t"))
        paragraphs.append((style.get(W + "val") if style is not None else None, text))
    return paragraphs


def check_structure(resume_text, paragraphs):
    """The name is the title; every dated line of the resume that is not a bullet or a
    sentence (a role, a degree) is in a heading, in the resume's order. Returns what is
    wrong, or None."""
    lines = [line.strip() for line in resume_text.splitlines() if line.strip()]
    if not paragraphs or paragraphs[0][0] != "Title" or paragraphs[0][1] not in lines[0]:
        return "the DOCX does not start with the name: %r" % (paragraphs[:1],)
    # Lines with a year, not bullets and not sentences (a sentence ends with a full stop).
    dated = [line for line in lines[1:]
             if re.search(r"\b(19|20)\d\d\b", line)
             and not line.startswith(("-", "*", "•")) and not line.endswith(".")]
    position = 0
    for line in dated:
        found = next((i for i in range(position, len(paragraphs))
                      if line in paragraphs[i][1] and (paragraphs[i][0] or "").startswith("Heading")), None)
        if found is None:
            return "the dated line %r is not a heading after paragraph %d" % (line, position)
        position = found + 1
    print("the DOCX keeps the name and", len(dated), "dated line(s) as headings, in order")
    return None


def main():
    base, resume_path, job_path, out_path = sys.argv[1:5]
    base = base.rstrip("/")
    with open(resume_path) as resume, open(job_path) as job:
        start = {"resume_text": resume.read(), "job_description": job.read()}
    resume_text = start["resume_text"]
    status, session = call("POST", base + "/api/resume/start", body=start)
    if status != 201:
        print("start failed:", status, session)
        return 1
    print("session", session["session_id"])
    token, last_id, result = session["token"], 0, None
    while result is None:
        try:
            for event_id, data in events(base, session["stream_url"], token, last_id):
                last_id = event_id
                kind = data.get("type")
                print(event_id, kind)
                if kind == "gate_open":
                    answer = answer_for(data["name"], data["payload"])
                    code, body = call("POST", base + "/api/resume/respond", token,
                                      {"session_id": session["session_id"],
                                       "gate": data["gate_id"], "answer": answer})
                    if code != 200:
                        print("answer refused:", code, body)
                        return 1
                elif kind == "session_failed":
                    print("failed:", data["error"])
                    return 1
                elif kind in ("session_cancelled", "session_expired"):
                    print(kind + ":", data["reason"])
                    return 1
                elif kind == "session_complete":
                    result = data["result"]
                    break
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            print("stream dropped, reconnecting after", last_id, error)
    code, status_body = call("GET", base + session["status_url"], token)
    if code != 200 or status_body["status"] != "complete":
        print("status:", code, status_body)
        return 1
    docx = base64.b64decode(result["docx_base64"])
    if len(docx) != result["docx_bytes"] or not docx.startswith(b"PK"):
        print("the DOCX is not a zip of the announced size")
        return 1
    with open(out_path, "wb") as out:
        out.write(docx)
    print("saved", out_path, len(docx), "bytes;", len(result["resume_markdown"]), "characters of Markdown")
    problem = check_structure(resume_text, docx_paragraphs(docx))
    if problem:
        print(problem)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
