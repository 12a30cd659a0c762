// Logs page: once the table shows the page of an evidence line, scroll that row into the middle of the view.
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  ncclscope: {
    scrollToTarget: function (data, target) {
      if (!target || !target.file || !data) { return window.dash_clientside.no_update; }
      setTimeout(function () {
        var rows = document.querySelectorAll("#log-table tr");
        for (var i = 0; i < rows.length; i++) {
          var line = rows[i].querySelector("td[data-dash-column=line]");
          var file = rows[i].querySelector("td[data-dash-column=file]");
          if (line && file && line.textContent.trim() === String(target.line) &&
              file.textContent.trim() === String(target.file)) {
            rows[i].scrollIntoView({block: "center"});
            rows[i].setAttribute("data-evidence", "1");
            document.body.setAttribute("data-scrolled-to", target.file + ":" + target.line);
            return;
          }
        }
      }, 50);
      return target.file + ":" + target.line;
    }
  }
});
