// The --html report: builds every table and chart from the JSON that --json prints, which
// the page embeds verbatim (#report-data). Each number shown names where it came from: a
// table cell by data-check="POINTER FORMAT", a chart value by its dataset's `paths`, so a
// test can compare the page with --json. Open with #selftest to have the page report what
// it drew into a pre element with the id selftest (tests/cli/browser_test.py reads it).
(function () {
  'use strict';
  const page = JSON.parse(document.getElementById('report-page').textContent);
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const root = document.getElementById('report');
  const GiB = 1073741824;
  const palette = ['#3b6fb6', '#e0823d', '#3f9e5a', '#c44e52', '#8172b2', '#937860', '#da8bc3', '#8c8c8c',
                   '#ccb974', '#64b5cd', '#1b4f72', '#a04000', '#196f3d', '#7b241c', '#4a235a', '#6e2c00'];
  Chart.defaults.animation = false;  // drawn at once: printable, and checkable by a test
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", sans-serif';

  // JSON pointer (RFC 6901) into the report's data.
  function at(pointer) {
    if (pointer === '') return data;
    return pointer.split('/').slice(1).reduce(function (v, k) {
      return v == null ? undefined : v[k.replace(/~1/g, '/').replace(/~0/g, '~')];
    }, data);
  }
  function esc(k) { return String(k).replace(/~/g, '~0').replace(/\//g, '~1'); }
  const formats = {
    gib2: function (v) { return (v / GiB).toFixed(2); },
    f0: function (v) { return Math.round(v).toLocaleString('en-US'); },
    f1: function (v) { return v.toFixed(1); },
    f3: function (v) { return v.toFixed(3); },
    pct1: function (v) { return (100 * v).toFixed(1) + '%'; },
    int: function (v) { return v.toLocaleString('en-US'); },
    str: function (v) { return String(v); },
    bool: function (v) { return v ? 'yes' : 'no'; },
  };

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { e.append(c instanceof Node ? c : document.createTextNode(String(c))); });
    return e;
  }
  // A cell showing the value at `pointer` in `format`, marked for the check.
  function cell(pointer, format) {
    const v = at(pointer);
    if (v === null || v === undefined) return el('td', {class: 'num'}, ['-']);
    const numeric = typeof v === 'number';
    return el('td', {class: numeric ? 'num' : '', 'data-check': pointer + ' ' + format}, [formats[format](v)]);
  }
  function table(headers, rows) {
    const t = el('table');
    t.append(el('tr', {}, headers.map(function (h) { return el('th', {}, [h]); })));
    rows.forEach(function (r) { t.append(el('tr', {}, r.map(function (c) { return c instanceof Node ? c : el('td', {}, [c]); }))); });
    return t;
  }
  function keyValues(rows) {  // [label, pointer, format]
    return table(['', ''], rows.map(function (r) { return [r[0], cell(r[1], r[2])]; }));
  }
  let chartCount = 0;
  function chart(parent, config, tall) {
    const box = el('div', {class: 'chart' + (tall ? ' tall' : '')});
    const canvas = el('canvas', {id: 'chart-' + (++chartCount) + '-' + config.name});
    box.append(canvas);
    parent.append(box);
    delete config.name;
    return new Chart(canvas.getContext('2d'), config);
  }
  // A dataset whose values come from JSON pointers, divided by `div` (GiB for bytes).
  function series(label, pointers, div, extra) {
    const ds = Object.assign({label: label, paths: pointers, div: div || 1}, extra || {});
    ds.data = pointers.map(function (p) { return p === null ? 0 : at(p) / ds.div; });
    return ds;
  }
  function constant(label, pointer, count, div, color) {
    const ps = []; for (let i = 0; i < count; i++) ps.push(pointer);
    return series(label, ps, div, {type: 'line', borderColor: color, backgroundColor: color, borderDash: [6, 4],
                                   pointRadius: 0, borderWidth: 2, fill: false});
  }
  function axis(title, extra) { return Object.assign({title: {display: true, text: title}}, extra || {}); }
  function h2(text) { root.append(el('h2', {}, [text])); }
  function note(text) { root.append(el('p', {class: 'note'}, [text])); }

  // ---- header: title, verdict, inputs, command line ----
  function header(fits, verdictText) {
    root.append(el('h1', {}, [page.title]));
    root.append(el('span', {class: 'verdict ' + (fits ? 'yes' : 'no'), id: 'verdict'}, [verdictText]));
    h2('Inputs');
    const rows = Object.keys(page.inputs).map(function (k) { return [k, String(page.inputs[k])]; });
    root.append(table(['input', 'as given'], rows));
    root.append(el('p', {class: 'note'}, ['Made by:']));
    root.append(el('pre', {class: 'command', id: 'command'}, [page.command]));
  }

  // ---- one layout's memory and time (estimate, and plan's top or closest layout) ----
  function layoutSection(base, heading) {
    const p = at(base);
    const mem = base + '/memory/per_gpu';
    h2(heading);
    root.append(el('p', {}, [el('code', {'data-check': base + '/layout/string str'}, [p.layout.string])]));
    const rows = [
      ['model', base + '/model/name', 'str'], ['parameters', base + '/model/params_total', 'int'],
      ['device peak GiB (nvidia-smi)', mem + '/peak_bytes', 'gib2'],
      ['reserved peak GiB (max_memory_reserved)', mem + '/reserved_peak_bytes', 'gib2'],
      ['allocated peak GiB (max_memory_allocated)', mem + '/allocated_peak_bytes', 'gib2'],
      ['needed to run GiB (what fits is decided on)', mem + '/required_bytes', 'gib2'],
      ['capacity GiB', mem + '/capacity_bytes', 'gib2'], ['free GiB', mem + '/headroom_bytes', 'gib2'],
      ['headroom required GiB', mem + '/headroom_required_bytes', 'gib2'], ['fits', mem + '/fits', 'bool'],
      ['peak phase (stage)', mem + '/peak_phase', 'str'],
      ['host RAM per node GiB', base + '/memory/per_node_host_bytes', 'gib2']];
    if (p.time.known && p.time.step_seconds > 0)
      rows.push(['step seconds', base + '/time/step_seconds', 'f3'],
                ['tokens/s per GPU', base + '/time/tokens_per_second_per_gpu', 'f0'], ['MFU', base + '/time/mfu', 'pct1']);
    root.append(keyValues(rows));
    if (p.assumed && p.assumed.length) note('assumed: ' + p.assumed.join('; '));

    // Memory per term, stacked, one bar per pipeline stage.
    const stages = p.memory.per_stage;
    const live = p.memory.per_gpu.live || {};
    const names = [];
    stages.forEach(function (s) { Object.keys(s.terms).forEach(function (n) { if (names.indexOf(n) < 0) names.push(n); }); });
    const onGpu = names.filter(function (n) { return !live[n] || (live[n].pool !== 'host' && live[n].pool !== 'paged'); });
    const datasets = onGpu.map(function (n, i) {
      return series(n, stages.map(function (s, si) {
        return s.terms[n] === undefined ? null : base + '/memory/per_stage/' + si + '/terms/' + esc(n);
      }), GiB, {backgroundColor: palette[i % palette.length], stack: 'terms'});
    });
    chart(root, {name: 'terms-per-stage', type: 'bar',
      data: {labels: stages.map(function (s) { return 'stage ' + s.stage + ' (' + s.layers + ' layers)'; }), datasets: datasets},
      options: {plugins: {title: {display: true, text: 'Memory per term and pipeline stage (GiB on one GPU; every term, whether or not live together)'},
                          legend: {position: 'right'}},
                scales: {x: {stacked: true}, y: axis('GiB', {stacked: true})}}}, true);

    // Memory across the phases of a step, on the fullest stage.
    const fi = stages.findIndex(function (s) { return s.stage === p.memory.per_gpu.stage; });
    const phases = stages[fi].phases.filter(function (ph) {
      return p.workload.task !== 'inference' || ph.phase === 'setup' || ph.phase === 'forward';
    });
    const pb = base + '/memory/per_stage/' + fi + '/phases/';
    const idx = phases.map(function (ph) { return stages[fi].phases.indexOf(ph); });
    const capLine = constant('capacity', mem + '/capacity_bytes', phases.length, GiB, '#c0392b');
    const budget = series('capacity - required headroom', idx.map(function () { return null; }), GiB,
                          {type: 'line', borderColor: '#e67e22', borderDash: [3, 3], pointRadius: 0, borderWidth: 2, fill: false});
    budget.data = idx.map(function () { return (p.memory.per_gpu.capacity_bytes - p.memory.per_gpu.headroom_required_bytes) / GiB; });
    budget.paths = idx.map(function () { return [['+', mem + '/capacity_bytes'], ['-', mem + '/headroom_required_bytes']]; });
    chart(root, {name: 'phases', type: 'bar',
      data: {labels: phases.map(function (ph) { return ph.phase === 'step' ? 'optimizer step' : ph.phase; }),
             datasets: [series('allocated (torch)', idx.map(function (i) { return pb + i + '/allocated_bytes'; }), GiB, {backgroundColor: '#3b6fb6'}),
                        series('reserved (torch)', idx.map(function (i) { return pb + i + '/reserved_bytes'; }), GiB, {backgroundColor: '#7fa7dc'}),
                        series('device (nvidia-smi)', idx.map(function (i) { return pb + i + '/device_bytes'; }), GiB, {backgroundColor: '#1d2433'}),
                        capLine, budget]},
      options: {plugins: {title: {display: true, text: 'Memory across the phases of a step, stage ' + p.memory.per_gpu.stage + ' (GiB)'}},
                scales: {y: axis('GiB', {beginAtZero: true})}}});

    // Step time by term.
    const tnames = Object.keys(p.time.terms || {});
    if (p.time.known && tnames.length) {
      chart(root, {name: 'time-terms', type: 'bar',
        data: {labels: tnames, datasets: [series('seconds per step', tnames.map(function (n) { return base + '/time/terms/' + esc(n); }), 1,
                                                 {backgroundColor: '#3f9e5a'})]},
        options: {indexAxis: 'y', plugins: {title: {display: true, text: 'Step time by term (s; terms may overlap, the step is ' +
                                                    p.time.step_seconds.toFixed(3) + ' s)'}, legend: {display: false}},
                  scales: {x: axis('seconds')}}});
    } else {
      note('Step time unknown: the GPU states no compute peak.');
    }
  }

  // ---- plan ----
  function planPage() {
    const fits = data.plans.length > 0;
    header(fits, fits ? data.plans.length + ' plans fit' : 'nothing fits');
    h2('Search');
    root.append(keyValues([['layouts considered', '/considered', 'int'], ['layouts priced', '/estimated', 'int'],
                           ['layouts that fit', '/feasible', 'int'], ['search seconds', '/search_seconds', 'f3']]));
    const seen = (data.seen && data.seen.points) || [];
    const fitsSeen = [], frontier = [], misses = [];
    seen.forEach(function (s, i) { (s.fits ? (s.pareto ? frontier : fitsSeen) : misses).push(i); });
    function pts(list) {
      return list.map(function (i) { return {x: seen[i].peak_bytes / GiB, y: seen[i].step_seconds, layout: seen[i].layout}; });
    }
    function ptPaths(list) {
      return list.map(function (i) { return {x: '/seen/points/' + i + '/peak_bytes', y: '/seen/points/' + i + '/step_seconds'}; });
    }
    if (fits) {
      frontier.sort(function (a, b) { return seen[a].peak_bytes - seen[b].peak_bytes; });
      const top = data.plans.map(function (p, i) {
        return {x: p.memory.per_gpu.peak_bytes / GiB, y: p.time.step_seconds, layout: '#' + (i + 1) + ' ' + p.layout.string};
      });
      const topPaths = data.plans.map(function (p, i) {
        return {x: '/plans/' + i + '/memory/per_gpu/peak_bytes', y: '/plans/' + i + '/time/step_seconds'};
      });
      chart(root, {name: 'candidates', type: 'scatter',
        data: {datasets: [
          {label: 'top plans', data: top, paths: topPaths, div: {x: GiB, y: 1}, backgroundColor: '#c0392b', pointRadius: 7, pointStyle: 'rectRot'},
          {label: 'Pareto frontier (faster or smaller than every other fit)', data: pts(frontier), paths: ptPaths(frontier), div: {x: GiB, y: 1},
           backgroundColor: '#e0823d', borderColor: '#e0823d', showLine: true, pointRadius: 4},
          {label: 'other fitting layouts (a sample of ' + fitsSeen.length + ')', data: pts(fitsSeen), paths: ptPaths(fitsSeen),
           div: {x: GiB, y: 1}, backgroundColor: 'rgba(59,111,182,0.45)', pointRadius: 3}]},
        options: {plugins: {title: {display: true, text: 'Fitting layouts: predicted step time against the memory each needs'},
                            tooltip: {callbacks: {label: function (c) {
                              return c.raw.layout + ': ' + c.raw.x.toFixed(1) + ' GiB, ' + c.raw.y.toFixed(3) + ' s';
                            }}}},
                  scales: {x: axis('GiB needed per GPU'), y: axis('step seconds')}}}, true);
      h2('Top plans');
      const plans = table(['#', 'layout', 'needs GiB', 'free GiB', 'step s', 'tok/s/GPU', 'MFU', 'why'],
        data.plans.map(function (p, i) {
          const b = '/plans/' + i;
          return [String(i + 1), cell(b + '/layout/string', 'str'), cell(b + '/memory/per_gpu/required_bytes', 'gib2'),
                  cell(b + '/memory/per_gpu/headroom_bytes', 'gib2'), cell(b + '/time/step_seconds', 'f3'),
                  cell(b + '/time/tokens_per_second_per_gpu', 'f0'), cell(b + '/time/mfu', 'pct1'), cell(b + '/reason', 'str')];
        }));
      plans.className = 'plans';
      plans.prepend(el('colgroup', {}, [32, 330, 70, 70, 70, 80, 60, 0].map(function (w) {
        return el('col', w ? {style: 'width:' + w + 'px'} : {});
      })));
      root.append(plans);
      layoutSection('/plans/0', 'Plan #1: memory and time');
    } else {
      h2('Nothing fits');
      root.append(el('p', {'data-check': '/binding str'}, [data.binding]));
      root.append(el('ul', {}, (data.advice || []).map(function (a, i) { return el('li', {'data-check': '/advice/' + i + ' str'}, [a]); })));
      if (misses.length) {
        const labels = misses.map(function (i) { return seen[i].layout; });
        const cap = data.closest ? '/closest/memory/per_gpu/capacity_bytes' : null;
        const ds = [series('GiB needed', misses.map(function (i) { return '/seen/points/' + i + '/peak_bytes'; }), GiB,
                           {backgroundColor: '#c44e52'})];
        if (cap) ds.push(constant('capacity', cap, misses.length, GiB, '#1d2433'));
        chart(root, {name: 'closest', type: 'bar', data: {labels: labels, datasets: ds},
          options: {indexAxis: 'y', plugins: {title: {display: true, text: 'The closest layouts: memory needed against capacity'}},
                    scales: {x: axis('GiB', {beginAtZero: true}), y: {ticks: {font: {size: 10}}}}}}, true);
      }
      if (data.closest) layoutSection('/closest', 'The closest layout: memory and time');
    }
  }

  // ---- validate ----
  function validatePage() {
    header(data.fits, data.fits ? 'every rank fits' : 'a rank does not fit');
    if (data.failure) root.append(el('p', {'data-check': '/failure str'}, [data.failure]));
    root.append(keyValues([['plan', '/plan', 'str'], ['backend', '/backend', 'str'], ['scale', '/scale', 'str'],
                           ['iterations', '/iterations', 'int'], ['ranks in the plan', '/plan_ranks', 'int']]));
    h2('Planned against measured peak, per rank');
    const ranks = data.ranks;
    const rp = function (f) { return ranks.map(function (r, i) { return '/ranks/' + i + '/' + f; }); };
    chart(root, {name: 'ranks', type: 'bar',
      data: {labels: ranks.map(function (r) { return 'rank ' + r.rank + ' (stage ' + r.stage + ')'; }),
             datasets: [series('planned peak', rp('planned_peak_bytes'), GiB, {backgroundColor: '#3b6fb6'}),
                        series('measured peak', rp('measured_peak_bytes'), GiB, {backgroundColor: '#e0823d'}),
                        series('capacity', rp('capacity_bytes'), GiB, {type: 'line', borderColor: '#c0392b', borderDash: [6, 4], pointRadius: 0, fill: false})]},
      options: {plugins: {title: {display: true, text: 'Peak per rank (GiB; rehearsed on the ' + data.backend + ' backend at scale ' + data.scale + ')'}},
                scales: {y: axis('GiB', {beginAtZero: true})}}});
    root.append(table(['rank', 'stage', 'planned GiB', 'measured GiB', 'capacity GiB', 'fits', 'error'],
      ranks.map(function (r, i) {
        const b = '/ranks/' + i;
        return [cell(b + '/rank', 'int'), cell(b + '/stage', 'int'), cell(b + '/planned_peak_bytes', 'gib2'),
                cell(b + '/measured_peak_bytes', 'gib2'), cell(b + '/capacity_bytes', 'gib2'), cell(b + '/fits', 'bool'),
                cell(b + '/error', 'str')];
      })));
    h2('Planned against allocated, per rank and term');
    const grid = el('div', {class: 'grid'});
    root.append(grid);
    ranks.slice(0, 8).forEach(function (r, i) {
      const tp = function (f) { return r.terms.map(function (t, k) { return '/ranks/' + i + '/terms/' + k + '/' + f; }); };
      chart(grid, {name: 'rank-' + r.rank + '-terms', type: 'bar',
        data: {labels: r.terms.map(function (t) { return t.name; }),
               datasets: [series('planned', tp('planned_bytes'), GiB, {backgroundColor: '#3b6fb6'}),
                          series('allocated', tp('allocated_bytes'), GiB, {backgroundColor: '#e0823d'})]},
        options: {indexAxis: 'y', plugins: {title: {display: true, text: 'rank ' + r.rank + ': GiB per term'}},
                  scales: {y: {ticks: {font: {size: 10}}}}}});
    });
    if (ranks.length > 8) note('The first 8 of ' + ranks.length + ' ranks are charted; every rank is in the JSON.');
    if (data.collectives.length) {
      h2('Collectives');
      root.append(table(['name', 'op', 'group', 'bytes', 'time us', 'busbw GB/s'], data.collectives.map(function (c, i) {
        const b = '/collectives/' + i;
        return [cell(b + '/name', 'str'), cell(b + '/op', 'str'), cell(b + '/group', 'str'), cell(b + '/size', 'int'),
                cell(b + '/time', 'f1'), cell(b + '/busbw', 'f3')];
      })));
    }
  }

  // ---- capacity ----
  function capacityPage() {
    const serve = data.target.kind === 'serve';
    header(data.meets, data.meets ? 'meets the target' : 'no GPU kind meets the target');
    h2('Answer per GPU kind');
    const answers = table(['GPU', 'meets', 'GPUs', serve ? 'tokens/s per request' : 'days', 'MFU', serve ? '$/h' : 'GPU-hours',
                       serve ? '$/M tokens' : 'cost $', 'layout'],
      data.kinds.map(function (k, i) {
        const a = '/kinds/' + i + '/answer';
        if (!k.answer) return [cell('/kinds/' + i + '/gpu', 'str'), cell('/kinds/' + i + '/meets', 'bool'), '-', '-', '-', '-', '-', '-'];
        return [cell('/kinds/' + i + '/gpu', 'str'), cell('/kinds/' + i + '/meets', 'bool'), cell(a + '/gpus', 'int'),
                cell(a + (serve ? '/request_tokens_per_second' : '/train_days'), 'f1'), cell(a + '/mfu', 'pct1'),
                cell(a + (serve ? '/cost_per_hour_usd' : '/gpu_hours'), 'f0'),
                cell(a + (serve ? '/cost_per_million_tokens_usd' : '/cost_usd'), serve ? 'f3' : 'f0'),
                cell(a + '/layout/string', 'str')];
      }));
    answers.className = 'plans';
    root.append(answers);
    const field = serve ? 'tokens_per_second' : 'train_days';
    const kindSets = function (f, label) {
      return data.kinds.map(function (k, i) {
        const idx = [];
        k.points.forEach(function (p, j) { if (typeof p[f] === 'number' && p.fits) idx.push(j); });
        idx.sort(function (a, b) { return k.points[a].gpus - k.points[b].gpus; });
        return {label: k.gpu + label, showLine: true, borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length],
                data: idx.map(function (j) { return {x: k.points[j].gpus, y: k.points[j][f], layout: k.points[j].layout ? k.points[j].layout.string : ''}; }),
                paths: idx.map(function (j) { return {x: '/kinds/' + i + '/points/' + j + '/gpus', y: '/kinds/' + i + '/points/' + j + '/' + f}; }),
                div: {x: 1, y: 1}};
      });
    };
    const tooltip = {callbacks: {label: function (c) { return c.dataset.label + ' at ' + c.raw.x + ' GPUs: ' + c.raw.y.toPrecision(4) + ' ' + c.raw.layout; }}};
    chart(root, {name: 'scaling', type: 'scatter', data: {datasets: kindSets(field, '')},
      options: {plugins: {title: {display: true, text: serve ? 'Total generated tokens/s against GPU count' : 'Days to train against GPU count'},
                          tooltip: tooltip},
                scales: {x: axis('GPUs', {type: 'logarithmic'}), y: axis(serve ? 'tokens/s' : 'days', {type: 'logarithmic'})}}}, true);
    chart(root, {name: 'mfu', type: 'scatter', data: {datasets: kindSets('mfu', ' MFU')},
      options: {plugins: {title: {display: true, text: 'Model FLOPs utilization against GPU count'}, tooltip: tooltip},
                scales: {x: axis('GPUs', {type: 'logarithmic'}), y: axis('MFU', {min: 0})}}});
    (data.kinds || []).forEach(function (k, i) {
      if (k.advice && k.advice.length) {
        h2(k.gpu + ': what would close the gap');
        root.append(el('ul', {}, k.advice.map(function (a, j) { return el('li', {'data-check': '/kinds/' + i + '/advice/' + j + ' str'}, [a]); })));
      }
    });
  }

  const pages = {plan: planPage, estimate: function () {
    header(data.memory.per_gpu.fits, data.memory.per_gpu.fits ? 'fits' : 'does not fit');
    layoutSection('', 'Memory and time');
  }, validate: validatePage, capacity: capacityPage};
  pages[page.kind]();

  if (location.hash === '#selftest') {
    const out = {errors: window.shardplanErrors, canvases: [], charts: [], cells: []};
    Object.values(Chart.instances).forEach(function (c) {
      const cv = c.canvas, ctx = cv.getContext('2d');
      const px = ctx.getImageData(0, 0, cv.width, cv.height).data;
      let painted = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) painted++;
      out.canvases.push({id: cv.id, width: cv.width, height: cv.height, painted: painted, data_url_length: cv.toDataURL().length});
      out.charts.push({id: cv.id, datasets: c.data.datasets.map(function (d) {
        return {label: d.label, data: d.data.map(function (v) { return typeof v === 'number' ? v : {x: v.x, y: v.y, layout: v.layout}; }),
                paths: d.paths, div: d.div};
      })});
    });
    document.querySelectorAll('[data-check]').forEach(function (e) {
      const parts = e.getAttribute('data-check').split(' ');
      out.cells.push({pointer: parts[0], format: parts[1], text: e.textContent});
    });
    out.command = document.getElementById('command').textContent;
    root.append(el('pre', {id: 'selftest'}, [JSON.stringify(out)]));
  }
})();
