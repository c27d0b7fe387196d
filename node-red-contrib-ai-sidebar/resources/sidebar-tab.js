/**
 * Where the AI tab sits in the editor's sidebar: its button among the pinned ones (Node-RED 4.1), and room for its
 * section in Node-RED 5's stacked sidebar. Both work on the editor's own markup, read as each version builds it.
 *
 * Editor-only script: registers `NodeRedAiSidebar.sidebarTab`, used by the plugin's script in ai-sidebar.html.
 */
(function () {
    "use strict";

    // Share of a stacked sidebar's height the AI tab's section gets when the tab is shown: Node-RED 5's own
    // defaultTopHeight for the primary sidebar (editor-client red.js, RED.sidebar), which 5.0.7 does not apply.
    var STACKED_SHARE = 0.7;

    /**
     * Give the tab's button a place among the pinned ones (info, help, debug), so it stays in the sidebar's icon
     * row rather than only in its ▾ menu.
     *
     * Node-RED 4.1 (editor-client red.js, RED.tabs) hides buttons from the end of the row when the sidebar is
     * narrow, and after every added tab it puts the row in the user's saved order (`editor.sidebar.order`,
     * default info, help, version-control, debug) followed by the other tabs as they come, which undoes where
     * `pinned: true` put the button: a plugin's tab always ends up last, behind config and context, and is hidden
     * first (already while it is being added). A user who dragged the button somewhere (the order then names this
     * tab) keeps their place.
     *
     * @param {string} tabId the id given to RED.sidebar.addTab
     */
    function placeWithPinnedTabs(tabId) {
        var order = RED.settings.get("editor.sidebar.order");
        if (Array.isArray(order) && order.indexOf(tabId) !== -1) {
            return;
        }
        var tab = $("#red-ui-tab-" + tabId);
        var button = $("#red-ui-tab-" + tabId + "-link-button");
        var lastPinned = button.siblings("a.red-ui-tab-link-button-pinned").last();
        var lastPinnedTab = lastPinned.length ?
            $("#red-ui-tab-" + String(lastPinned.data("tabId")).replace(".", "-")) : $();
        // Another version of the editor that builds the row differently: leave it as it is.
        if (!tab.length || !button.length || !lastPinnedTab.length) {
            return;
        }
        // The tab row's own order is what later reorderings keep, so the tab moves with its button.
        tab.insertAfter(lastPinnedTab);
        button.insertAfter(lastPinned);
        // The row hides buttons from its end and shows hidden ones from its start: the button hidden while it was
        // last changes places with the last one still shown after it, so as many buttons as before are shown.
        var lastShown = button.nextAll("a.red-ui-tab-link-button:visible").last();
        if (!button.is(":visible") && lastShown.length) {
            lastShown.hide();
            button.show();
        }
    }

    /**
     * Give the tab's section room in Node-RED 5's stacked sidebar, where two sections share the column: the top one
     * opens 300 px high (the tab's message area about 100 px) and the bottom one (Debug) takes the rest. Shown in a
     * section below STACKED_SHARE of the column, the tab gets that share, as a user would drag the separator; the
     * other section keeps the remainder. A sidebar with one section (Node-RED 4.1) is left alone.
     *
     * @param {jQuery} content the tab's content
     */
    function fitStackedSection(content) {
        var section = content.closest(".red-ui-sidebar-section");
        var sections = section.parent().children(".red-ui-sidebar-section");
        var top = sections.filter(".red-ui-sidebar-section-top");
        var bottom = sections.filter(".red-ui-sidebar-section-bottom");
        if (!top.is(":visible") || !bottom.is(":visible")) {
            return;
        }
        var total = top.outerHeight() + bottom.outerHeight();
        if (section.outerHeight() >= total * STACKED_SHARE) {
            return;
        }
        top.outerHeight(Math.round(total * (section.is(top) ? STACKED_SHARE : 1 - STACKED_SHARE)));
        RED.events.emit("sidebar:resize");
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.sidebarTab = {
        placeWithPinnedTabs: placeWithPinnedTabs,
        fitStackedSection: fitStackedSection
    };
}());
