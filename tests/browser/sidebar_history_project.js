// Drives the sidebar's History panel (issue 35) with Node-RED's Projects feature on, in headless Debian Chromium,
// and reports what the user saw as one JSON line on stdout: the project line at the top of the panel, the recent
// commits once unfolded, and the panel at 240 px.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR.
"use strict";
const editor = require("./editor");

async function projectView(page) {
    return page.evaluate(() => {
        const panel = document.querySelector(".ai-sidebar-history");
        const area = panel.querySelector(".ai-sidebar-history-project");
        const sidebar = document.querySelector("#red-ui-sidebar").getBoundingClientRect();
        const details = area.querySelector("details");
        return {
            visible: area.offsetParent !== null,
            first: panel.children[1] === area,
            line: area.querySelector(".ai-sidebar-history-project-text").innerText.trim(),
            summary: details ? details.querySelector("summary").innerText.trim() : null,
            open: details ? details.open : null,
            commits: Array.from(area.querySelectorAll(".ai-sidebar-history-commit")).map((item) => ({
                sha: item.getAttribute("data-sha"),
                subject: item.querySelector(".ai-sidebar-history-commit-subject").innerText.trim(),
                meta: item.querySelector(".ai-sidebar-history-commit-meta").innerText.trim(),
                shown: item.checkVisibility()
            })),
            fits: panel.scrollWidth <= panel.clientWidth + 1 && panel.getBoundingClientRect().right <= sidebar.right + 1
        };
    });
}

editor.runEditorScript(async function (page, result) {
    await page.evaluate(() => RED.sidebar.show("ai-sidebar"));
    await page.click(".ai-sidebar-history-button");
    await page.waitForSelector(".ai-sidebar-history-project .ai-sidebar-history-project-text", { timeout: 20000 });
    result.closed = await projectView(page);
    await page.click(".ai-sidebar-history-project summary");
    result.unfolded = await projectView(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-history"), result, "sidebar-history-project.png");
    const width = await editor.sidebarWidth(page);
    result.narrowWidth = await editor.resizeSidebar(page, 240);
    result.narrow = await projectView(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-history"), result, "sidebar-history-project-narrow.png");
    await editor.resizeSidebar(page, width);
});
