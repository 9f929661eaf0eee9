#!/usr/bin/env python3
"""Checks a product's published contract against what its server really sends:

    python3 examples/clients/openapi_check.py BASE_URL

Fetches GET /api/resume/openapi.json, validates it as an OpenAPI 3.1 document
(openapi-spec-validator), runs a whole resume session with the documented client
(resume_client.py), and validates against the document's JSON Schemas every event of the
stream (Event), every answer given (Answer_<gate kind>) and the result (Output). Exits 0
when all fit, 1 otherwise.
"""
import importlib.util
import json
import os
import sys
import urllib.request

import jsonschema
from openapi_spec_validator import validate

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
spec = importlib.util.spec_from_file_location("resume_client", os.path.join(HERE, "resume_client.py"))
client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(client)

KINDS = ["research_validation", "questionnaire", "positioning_q", "section_review", "architect_review",
         "quality_review"]


def main():
    base = sys.argv[1].rstrip("/")
    with urllib.request.urlopen(base + "/api/resume/openapi.json", timeout=30) as response:
        document = json.loads(response.read())
    validate(document)
    print("openapi.json is a valid OpenAPI", document["openapi"], "document")

    def validator(name):
        # The whole document is the root, so "#/components/schemas/..." resolves.
        schema = dict(document, **{"$ref": "#/components/schemas/" + name})
        return jsonschema.Draft202012Validator(schema)

    events, answers, problems = validator("Event"), {}, []
    with open(os.path.join(ROOT, "fixtures/resume/resume.txt")) as r, \
            open(os.path.join(ROOT, "fixtures/resume/job.txt")) as j:
        body = {"resume_text": r.read(), "job_description": j.read()}
    validator("StartRequest").validate(body)
    code, session = client.call("POST", base + "/api/resume/start", body=body)
    assert code == 201, (code, session)
    seen, result = 0, None
    for _, event in client.events(base, session["stream_url"], session["token"], 0):
        seen += 1
        for error in events.iter_errors(event):
            problems.append("event %s: %s" % (event.get("type"), error.message))
        if event.get("type") == "gate_open":
            answer = client.answer_for(event["name"], event["payload"])
            kind = next(k for k in KINDS if event["name"] == k or event["name"].startswith(k + "_"))
            answers.setdefault(kind, validator("Answer_" + kind))
            for error in answers[kind].iter_errors(answer):
                problems.append("answer to %s: %s" % (event["name"], error.message))
            code, reply = client.call("POST", base + "/api/resume/respond", session["token"],
                                      {"session_id": session["session_id"],
                                       "gate": event["gate_id"], "answer": answer})
            assert code == 200, (code, reply)
        if event.get("type") == "session_complete":
            result = event["result"]
        if event.get("type") in ("session_complete", "session_failed", "session_cancelled", "session_expired"):
            break
    if result is None:
        problems.append("the session did not complete")
    else:
        for error in validator("Output").iter_errors(result):
            problems.append("result: " + error.message)
    print("checked", seen, "events,", len(answers), "gate kinds, and the result")
    for problem in problems:
        print("FAIL", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
