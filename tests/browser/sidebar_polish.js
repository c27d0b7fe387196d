// Issue 31, finding 6 in the browser (tests/test_browser_polish.py): axe-core on the AI tab in four states a user
// meets (a chat with an answer, the conversation list open, the Knowledge panel, an approval card), each with no
// critical or serious finding; the header at the default width shows the model and usage whole.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID, QUESTION (answered with text), CHANGE (answered
// with an approval card).
// Output: one JSON line on stdout.
"use strict";
const editor = require("./editor");
const { axeScan } = require("./sidebar_a11y");

/** The message list's role and accessible name as the page gives them. */
async function messageList(page) {
    return page.evaluate(() => {
        const list = document.querySelector(".ai-sidebar-messages");
        const labelled = list.getAttribute("aria-labelledby");
        return { role: list.getAttribute("role"),
            name: list.getAttribute("aria-label") || (labelled && document.getElementById(labelled).textContent) };
    });
}

/**
 * The header line and the composer's row at this width: the model's and the usage's texts and whether either is
 * cut (wider than its box), the scenario select's width against the width its chosen name needs, and
 * whether Send is inside the sidebar.
 */
async function headerLayout(page) {
    return page.evaluate(() => {
        const cut = (el) => el.scrollWidth > el.clientWidth + 1;
        const model = document.querySelector(".ai-sidebar-model");
        const usage = document.querySelector(".ai-sidebar-session-usage");
        const select = document.querySelector(".ai-sidebar-scenario");
        // The width the chosen option's name needs: a copy of the select holding only that option, unsqueezed.
        const alone = select.cloneNode(false);
        alone.appendChild(select.options[select.selectedIndex].cloneNode(true));
        alone.style.cssText = "position: absolute; width: auto; min-width: 0; max-width: none; flex: none;";
        select.parentNode.appendChild(alone);
        const natural = alone.getBoundingClientRect().width;
        alone.remove();
        const sidebar = document.querySelector(".ai-sidebar").getBoundingClientRect();
        return {
            sidebarWidth: Math.round(sidebar.width),
            model: model.innerText.trim(), modelCut: cut(model),
            usage: usage.innerText.trim(), usageCut: cut(usage),
            scenario: select.options[select.selectedIndex].text,
            scenarioSqueezed: select.getBoundingClientRect().width < natural - 1,
            scenarioWidths: [Math.round(select.getBoundingClientRect().width), Math.round(natural)],
            sendInside: document.querySelector(".ai-sidebar-send").getBoundingClientRect().right <= sidebar.right + 0.5
        };
    });
}

editor.runEditorScript(async (page, result) => {
    const env = process.env;
    await page.setViewportSize({ width: 1366, height: 768 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    // The header of a new conversation: the texts of its buttons.
    result.newChatHeader = await page.locator(".ai-sidebar .red-ui-sidebar-header button:visible").allInnerTexts();
    await editor.ask(page, env.QUESTION);
    await page.waitForSelector(".ai-sidebar-session-usage", { state: "visible", timeout: 15000 });
    result.header = await headerLayout(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "polish-header.png");
    result.messageList = await messageList(page);
    result.scans = {};
    result.scans.chat = await axeScan(page);
    await editor.screenshot(page, result, "polish-chat.png");

    // The conversation list, with this conversation in it.
    await page.click(".ai-sidebar-session-button");
    await page.waitForSelector(".ai-sidebar-session", { timeout: 10000 });
    result.scans.conversations = await axeScan(page);
    await editor.screenshot(page, result, "polish-conversations.png");
    await page.keyboard.press("Escape");

    await page.click(".ai-sidebar-knowledge-button");
    await page.waitForSelector(".ai-sidebar-knowledge-store", { timeout: 20000 });
    result.scans.knowledge = await axeScan(page);
    await editor.screenshot(page, result, "polish-knowledge.png");
    await page.click(".ai-sidebar-knowledge-button");

    await editor.ask(page, env.CHANGE);
    await page.waitForSelector(".ai-sidebar-approval", { timeout: 10000 });
    result.scans.approval = await axeScan(page);
    await editor.screenshot(page, result, "polish-approval.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "polish-approval-detail.png");
});
