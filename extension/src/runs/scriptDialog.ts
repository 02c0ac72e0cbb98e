/** The "Run with torchrun…" dialog: how many processes and which arguments, for a learner's .py file. */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import type { EngineInfo, RunRecording, ScriptRunRequest } from '../api/types';
import { h } from '../dom';
import { MAX_SCRIPT_NPROC, recordingFlags, scriptRequest } from './requests';
import { buildWhere } from './where';
import { MachineFacts, oversubscriptionWarning } from './machineFit';
import { WhereChooser, WhereState } from './whereChooser';

interface ScriptFields {
  nproc: string;
  args: string;
  recordMemory: boolean;
  recordProfile: boolean;
  where: WhereState | null;
}

/** The dialog's body: two fields and, after a wrong try, what was wrong. */
class ScriptForm extends Widget implements Dialog.IBodyWidget<ScriptFields> {
  constructor(
    path: string,
    fields: ScriptFields,
    problem: string,
    engines: ReadonlyArray<EngineInfo> | null,
    machine: MachineFacts | null = null
  ) {
    super();
    this.addClass('gpudojo-script-form');
    this._where = new WhereChooser({ launcher: 'torchrun', initial: fields.where });
    this._where.setEngines(engines);
    this._nproc = h('input', {
      className: 'jp-mod-styled',
      attrs: { name: 'nproc', type: 'number', min: '1', max: String(MAX_SCRIPT_NPROC), step: '1' }
    });
    this._nproc.value = fields.nproc;
    // Warn before Start when nproc asks this machine for more cores (or GPUs) than it has.
    const fit = h('p', { className: 'gpudojo-run-oversubscribe', attrs: { role: 'status' } });
    const refreshFit = () => {
      const local = this._where.engine === 'local';
      const warning = machine && local ? oversubscriptionWarning([Number(this._nproc.value)], machine) : null;
      fit.textContent = warning ?? '';
      fit.hidden = !warning;
    };
    this._nproc.addEventListener('input', refreshFit);
    this._where.node.addEventListener('change', refreshFit);
    refreshFit();
    this._args = h('input', {
      className: 'jp-mod-styled',
      attrs: { name: 'args', type: 'text', placeholder: 'e.g. --epochs 2 --lr 0.01' }
    });
    this._args.value = fields.args;
    this._recordMemory = h('input', { attrs: { name: 'record_memory', type: 'checkbox' } });
    this._recordMemory.checked = fields.recordMemory;
    this._recordProfile = h('input', { attrs: { name: 'record_profile', type: 'checkbox' } });
    this._recordProfile.checked = fields.recordProfile;
    this.node.append(
      h('p', {}, 'torchrun starts ', h('code', { text: path }), ' once per process, each with its RANK and WORLD_SIZE.'),
      h('label', { className: 'gpudojo-run-form-field' }, h('span', { className: 'gpudojo-run-form-name', text: 'Processes (nproc)' }), this._nproc),
      fit,
      h(
        'label',
        { className: 'gpudojo-run-form-field' },
        h('span', { className: 'gpudojo-run-form-name', text: 'Arguments' }),
        this._args,
        h('span', { className: 'gpudojo-run-form-help', text: 'Split as a shell would; quotes group words.' })
      ),
      h(
        'label',
        { className: 'gpudojo-run-record-memory-toggle' },
        this._recordMemory,
        ' Record memory',
        h('span', { className: 'gpudojo-run-form-help', text: 'labkit.memory_capture() in the script writes one capture per rank.' })
      ),
      h(
        'label',
        { className: 'gpudojo-run-record-profile-toggle' },
        this._recordProfile,
        ' Record profile',
        h('span', {
          className: 'gpudojo-run-form-help',
          text: 'labkit.profile() and labkit.profile_step() in the script write one torch.profiler trace per rank.'
        })
      ),
      this._where.node,
      h('div', { className: 'gpudojo-field-error', attrs: { role: 'alert' }, text: problem })
    );
  }

  getValue(): ScriptFields {
    return {
      nproc: this._nproc.value,
      args: this._args.value,
      recordMemory: this._recordMemory.checked,
      recordProfile: this._recordProfile.checked,
      where: this._where.state
    };
  }

  private _nproc: HTMLInputElement;
  private _args: HTMLInputElement;
  private _recordMemory: HTMLInputElement;
  private _recordProfile: HTMLInputElement;
  private _where: WhereChooser;
}

/**
 * Ask for processes, arguments and where to run until they are valid; null
 * when the learner cancels. `engines`: GET runs/engines (null: this machine only).
 */
export async function askScriptRun(
  path: string,
  engines: ReadonlyArray<EngineInfo> | null = null,
  machine: MachineFacts | null = null
): Promise<(ScriptRunRequest & RunRecording) | null> {
  let fields: ScriptFields = { nproc: '2', args: '', recordMemory: false, recordProfile: false, where: null };
  let problem = '';
  for (;;) {
    const result = await showDialog<ScriptFields>({
      title: 'Run with torchrun',
      body: new ScriptForm(path, fields, problem, engines, machine),
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Start' })],
      focusNodeSelector: 'input[name=nproc]'
    });
    if (!result.button.accept || !result.value) {
      return null;
    }
    fields = result.value;
    try {
      const request = scriptRequest(path, fields.nproc, fields.args);
      const engine = fields.where?.engine ?? 'local';
      const where = buildWhere(engine, fields.where?.raw[engine] ?? {});
      if (!where.where) {
        const [name, message] = Object.entries(where.errors)[0];
        throw new Error(`Where: ${name}: ${message}`);
      }
      if (where.where.engine !== 'local') {
        request.where = where.where;
      }
      return { ...request, ...recordingFlags({ memory: fields.recordMemory, profile: fields.recordProfile }) };
    } catch (error) {
      problem = (error as Error).message;
    }
  }
}
