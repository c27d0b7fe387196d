// The sidebar's MCP access panel (issue 40; tests/test_mcp_grant_list.py), the sidebar 240 px wide, with the
// keyboard alone: open it from the header's key button, read the grants, Tab to the one of CLIENT and revoke it
// with Enter, Escape back to the button. Reports what the user saw as one JSON line on stdout.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, CLIENT (the client name whose grant is revoked).
"use strict";
const editor = require("./editor");

const env = process.env;

async function panelView(page) {
    return page.evaluate(() => {
        const panel = document.querySelector(".ai-sidebar-mcp-grants");
        const sidebar = document.querySelector("#red-ui-sidebar").getBoundingClientRect();
        const button = document.querySelector(".red-ui-sidebar-header .ai-sidebar-mcp-grants-button");
        return {
            open: !!panel && panel.offsetParent !== null,
            title: panel.querySelector(".ai-sidebar-knowledge-title").innerText.trim(),
            status: panel.querySelector(".ai-sidebar-mcp-grants-status").innerText.trim(),
            grants: Array.from(panel.querySelectorAll(".ai-sidebar-mcp-grant")).map((item) => ({
                id: item.getAttribute("data-grant"),
                client: item.querySelector(".ai-sidebar-mcp-grant-client").innerText.trim(),
                detail: item.querySelector(".ai-sidebar-mcp-grant-detail").innerText.trim(),
                revoke: item.querySelector(".ai-sidebar-mcp-grant-revoke").getAttribute("aria-label")
            })),
            // Nothing sticks out sideways at 240 px: the panel scrolls only down and stays inside the sidebar.
            fits: !!panel && panel.scrollWidth <= panel.clientWidth + 1 &&
                panel.getBoundingClientRect().right <= sidebar.right + 1,
            buttonInHeader: !!button && button.getBoundingClientRect().right <= sidebar.right + 1
        };
    });
}

function focused(page) {
    return page.evaluate(() => document.activeElement.getAttribute("aria-label") ||
        document.activeElement.className);
}

editor.runEditorScript(async (page, result) => {
    await editor.showTab(page, await page.evaluate(() => RED.workspaces.active()));
    result.width = await editor.resizeSidebar(page, 240);
    // The keyboard from here on: the header's key button, Enter.
    await page.locator(".ai-sidebar-mcp-grants-button").focus();
    result.buttonLabel = await focused(page);
    await page.keyboard.press("Enter");
    await page.waitForSelector(".ai-sidebar-mcp-grant", { timeout: 20000 });
    result.afterOpen = await focused(page);
    result.panel = await panelView(page);
    await editor.screenshot(page, result, "sidebar-mcp-grants-narrow.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar-mcp-grants"), result, "sidebar-mcp-grants-panel.png");
    // Tab until the revoke button of CLIENT has the focus (the close button, then one Revoke per grant).
    const wanted = result.panel.grants.find((grant) => grant.client === env.CLIENT).revoke;
    result.tabbedThrough = [];
    for (let i = 0; i < 10 && (await focused(page)) !== wanted; i++) {
        await page.keyboard.press("Tab");
        result.tabbedThrough.push(await focused(page));
    }
    await page.keyboard.press("Enter");
    await page.waitForFunction((client) => !Array.from(document.querySelectorAll(".ai-sidebar-mcp-grant-client"))
        .some((node) => node.innerText.trim() === client), env.CLIENT, { timeout: 20000 });
    result.afterRevoke = await panelView(page);
    result.focusAfterRevoke = await page.evaluate(() => document.activeElement.className);
    await page.keyboard.press("Escape");
    result.closed = !(await page.locator(".ai-sidebar-mcp-grants").isVisible());
    result.focusAfterEscape = await focused(page);
});
