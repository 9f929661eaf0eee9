"""Optimizes a resume through `jd_optimizer serve`'s MCP front, as a desktop assistant
would: the official MCP Python SDK (PyPI `mcp`) over streamable HTTP, configured from
docs/mcp.md alone.

usage: mcp_optimize.py SERVER_URL RESUME_FILE JD_FILE [API_KEY]

Prints the tools offered, every progress notification, and the optimization's ATS
scores and rewritten bullets; exits 1 if the call fails.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def optimize(url: str, resume: str, jd: str, key: str | None) -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    notes: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message or "")
        print(f"progress {progress:g}: {message}", flush=True)

    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                info = await session.initialize()
                print(f"server: {info.server_info.name} {info.server_info.version}")
                listed = await session.list_tools()
                print("tools:", ", ".join(tool.name for tool in listed.tools))
                tool = next(t for t in listed.tools if t.name == "optimize_resume")
                required = tool.input_schema.get("required", [])
                print("optimize_resume needs:", ", ".join(sorted(required)))
                result = await session.call_tool(
                    "optimize_resume",
                    {"resume_text": resume, "jd_text": jd},
                    read_timeout_seconds=600,
                    progress_callback=on_progress,
                )
    text = "".join(block.text for block in result.content if block.type == "text")
    if result.is_error:
        print(f"error: {text}")
        return 1
    answer = result.structured_content or json.loads(text)
    print(f"progress notifications: {len(notes)}")
    print(f"tenant: {answer['tenant_id']}")
    print("result fields:", ", ".join(sorted(answer)))
    print(f"ATS score: {answer['baseline_score']:.2f} -> {answer['ats_score']:.2f}")
    print(f"rewritten bullets: {len(answer['optimized_bullets'])}")
    return 0


def main() -> int:
    if len(sys.argv) not in (4, 5):
        print(__doc__)
        return 2
    url = sys.argv[1].rstrip("/")
    with open(sys.argv[2], encoding="utf-8") as f:
        resume = f.read()
    with open(sys.argv[3], encoding="utf-8") as f:
        jd = f.read()
    key = sys.argv[4] if len(sys.argv) == 5 else None
    return asyncio.run(optimize(url, resume, jd, key))


if __name__ == "__main__":
    sys.exit(main())
