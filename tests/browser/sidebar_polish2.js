// Issue 31, the items the first polish left (tests/test_browser_polish2.py): a chip per selected node, removable
// with the keyboard; a flow in an answer collapsed to a summary line with Import / Copy / Show; a Retry that takes
// the failed try's place; an approval card whose summary names the tab, not its id.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID, NODE_IDS (JSON: two nodes of the tab to select),
// QUESTION (answered with text), FLOW_QUESTION (answered with a flow block), RETRY_QUESTION (fails, then answered
// on Retry), CHANGE (answered with an approval card).
// Output: one JSON line on stdout.
"use strict";
const editor = require("./editor");

const env = process.env;

/** The node chips as shown: their names, the list's name, and the remove buttons' names. */
async function nodeChips(page) {
    return page.evaluate(() => {
        const list = document.querySelector(".ai-sidebar-node-chips");
        return {
            role: list.getAttribute("role"),
            name: list.getAttribute("aria-label"),
            visible: list.offsetParent !== null,
            names: Array.from(list.querySelectorAll(".ai-sidebar-node-chip-name")).map((el) => el.textContent),
            buttons: Array.from(list.querySelectorAll("button")).map((el) => el.getAttribute("aria-label"))
        };
    });
}

/** The focused element: its class and accessible name. */
async function focused(page) {
    return page.evaluate(() => ({ className: document.activeElement.className,
        name: document.activeElement.getAttribute("aria-label") }));
}

/** The last answer's flow block: its bar's label and buttons, whether its JSON shows, and the answer's height. */
async function flowBlock(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        const pre = answer.querySelector("pre[data-ai-sidebar-flow='yes']");
        const bar = pre.previousElementSibling;
        const show = bar.querySelector(".ai-sidebar-flow-show");
        return {
            label: bar.querySelector(".ai-sidebar-flow-label").textContent.trim(),
            buttons: Array.from(bar.querySelectorAll("button")).map((b) => b.innerText.trim()),
            jsonShown: pre.offsetParent !== null && pre.getBoundingClientRect().height > 0,
            expanded: show.getAttribute("aria-expanded"),
            controls: show.getAttribute("aria-controls") === pre.id,
            answerHeight: Math.round(answer.getBoundingClientRect().height)
        };
    });
}

editor.runEditorScript(async (page, result) => {
    await page.setViewportSize({ width: 1366, height: 768 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.waitIdle(page);

    // 1. A chip per selected node; the keyboard removes one, and the focus stays among the chips.
    await page.evaluate((ids) => {
        RED.view.select({ nodes: ids.map((id) => RED.nodes.node(id)) });
    }, JSON.parse(env.NODE_IDS));
    await page.waitForSelector(".ai-sidebar-node-chip", { timeout: 10000 });
    result.chips = await nodeChips(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "polish2-node-chips.png");
    await page.focus(".ai-sidebar-input");
    await page.keyboard.press("Shift+Tab");
    result.focusedBefore = await focused(page);
    await page.keyboard.press("Enter");
    result.focusedAfter = await focused(page);
    result.chipsAfter = await nodeChips(page);
    result.contextAfter = (await page.locator(".ai-sidebar-context").textContent()).trim();
    await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "polish2-node-chip-removed.png");
    await editor.ask(page, env.QUESTION);
    result.sentContext = (await page.locator(".ai-sidebar-message-user .ai-sidebar-sent-context").last()
        .innerText()).trim();

    // 2. A flow in an answer: collapsed to its summary; Show (by keyboard) opens it.
    await page.evaluate(() => RED.view.select(""));
    await editor.ask(page, env.FLOW_QUESTION);
    result.flowCollapsed = await flowBlock(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "polish2-flow-collapsed.png");
    await page.focus(".ai-sidebar-message-assistant >> nth=-1 >> .ai-sidebar-flow-show");
    await page.keyboard.press("Enter");
    result.flowShown = await flowBlock(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "polish2-flow-shown.png");

    // 3. A Retry takes the failed try's place: the question shows once.
    await editor.ask(page, env.RETRY_QUESTION);
    await page.locator(".ai-sidebar-retry").last().click();
    await editor.waitIdle(page);
    result.afterRetry = await editor.transcript(page);
    await editor.screenshot(page, result, "polish2-retried.png");

    // 3. The approval card's summary names the tab (and nodes) as the user knows them.
    await editor.ask(page, env.CHANGE);
    await page.waitForSelector(".ai-sidebar-approval-summary", { timeout: 10000 });
    result.cardSummary = (await page.locator(".ai-sidebar-approval-summary").last().innerText()).trim();
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "polish2-approval.png");
});
