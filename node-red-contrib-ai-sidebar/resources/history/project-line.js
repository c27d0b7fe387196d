/**
 * The History panel's line about Node-RED's Projects feature (issue 35): when it is on and a project is active, the
 * listing's `project` (`{name, commits: [{sha, subject, author, time (ISO 8601 UTC)}]}` newest first, or
 * `{name, error: code}` when its git history could not be read; `null` when Projects is off,
 * service/history/projects.py) is said at the top of the panel: "Projects is on: project <name>, last commit
 * <subject> (<time>)", and the recent commits in a collapsible list (a `<details>`, closed at first).
 *
 * Editor-only script: registers `NodeRedAiSidebar.historyProject`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";

    function t(key, options) {
        return RED._(NS + key, options);
    }

    function commitItem(commit, locale) {
        var item = $('<li class="ai-sidebar-history-commit"></li>').attr("data-sha", commit.sha || "");
        $('<span class="ai-sidebar-history-commit-subject"></span>').text(commit.subject || "").appendTo(item);
        $('<span class="ai-sidebar-history-commit-meta"></span>')
            .text(t("flowHistory.project.commitMeta", {
                time: window.NodeRedAiSidebar.history.formatTime(commit.time, locale),
                author: commit.author || "",
                sha: String(commit.sha || "").slice(0, 7)
            }))
            .appendTo(item);
        return item;
    }

    /**
     * Fill `container` (a jQuery element, emptied first) with the project line, or hide it when `project` is
     * null or not an object.
     *
     * @param {jQuery} container the panel's project area
     * @param {?{name: ?string, commits: ?Array, error: ?string}} project the listing's `project`
     * @param {string} [locale] the editor's language, for the times
     */
    function render(container, project, locale) {
        container.empty();
        if (!project || typeof project !== "object") {
            container.hide();
            return;
        }
        var name = project.name || "?";
        var commits = Array.isArray(project.commits) ? project.commits : [];
        var line = $('<div class="ai-sidebar-history-project-line"></div>').appendTo(container);
        $('<i class="fa fa-code-fork" aria-hidden="true"></i>').appendTo(line);
        var text;
        if (project.error) {
            text = t("flowHistory.project.unreadable", { name: name, code: project.error });
        } else if (!commits.length) {
            text = t("flowHistory.project.noCommits", { name: name });
        } else {
            text = t("flowHistory.project.on", {
                name: name,
                subject: commits[0].subject || "",
                time: window.NodeRedAiSidebar.history.formatTime(commits[0].time, locale)
            });
        }
        $('<span class="ai-sidebar-history-project-text"></span>').text(text).appendTo(line);
        if (commits.length) {
            var details = $('<details class="ai-sidebar-history-commits"></details>').appendTo(container);
            $("<summary></summary>").text(t("flowHistory.project.commits", { count: commits.length }))
                .appendTo(details);
            var list = $('<ol class="ai-sidebar-history-commit-list"></ol>').appendTo(details);
            commits.forEach(function (commit) {
                commitItem(commit, locale).appendTo(list);
            });
        }
        container.show();
    }

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.historyProject = { render: render };
}());
