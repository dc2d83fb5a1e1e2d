"""The fastmcp server `cargo xtask e2e` runs (e2e/README.md): fastmcp's own features a host
must handle, each in one tool.

- `instructions`: the server's instructions, which the host puts in the system prompt.
- `forecast`: a return type fastmcp turns into an `outputSchema`, and the result's
  `structuredContent` that matches it.
- `count`: progress through `ctx.report_progress`, one notification a step.
- `unlock`: enables the `vault` tool for this session (`ctx.enable_components`), and fastmcp
  sends `notifications/tools/list_changed`; `vault` is disabled until then.
"""

import asyncio

from pydantic import BaseModel

from fastmcp import Context, FastMCP

mcp = FastMCP(
    "e2e-fastmcp",
    instructions="Call unlock before vault: vault is offered only once unlock has run.",
)


class Forecast(BaseModel):
    """A day's weather in one city."""

    city: str
    temperature_celsius: float
    conditions: str


@mcp.tool
def forecast(city: str) -> Forecast:
    """Tomorrow's weather in a city (always mild here)."""
    return Forecast(city=city, temperature_celsius=21.5, conditions="sunny")


@mcp.tool
async def count(steps: int, ctx: Context) -> str:
    """Counts to `steps`, reporting progress after each step."""
    for step in range(1, steps + 1):
        await asyncio.sleep(0.05)
        await ctx.report_progress(progress=step, total=steps, message=f"step {step} of {steps}")
    return f"Counted to {steps}."


@mcp.tool
async def unlock(ctx: Context) -> str:
    """Makes the vault tool available in this session."""
    await ctx.enable_components(names={"vault"}, components={"tool"})
    return "The vault tool is now available."


@mcp.tool
def vault() -> str:
    """What the vault holds (offered only after unlock)."""
    return "The vault holds the e2e secret: 42."


mcp.disable(names={"vault"}, components={"tool"})

if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
