// A kernel written in TypeScript's runtime, as a platform team would write
// one with the official Temporal SDK (@temporalio/client): it hands Fenix a
// tool call and reads the result, answers a permission with the
// decide_permission update, and cancels a running command with the cancel
// signal. It prints one JSON line per event for the Go test.
//
// usage: node kernel.mjs <address> <namespace> <task queue> <prefix>
import { Connection, Client } from '@temporalio/client';

const [address, namespace, taskQueue, prefix] = process.argv.slice(2);
const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function assignment(id, toolCall, allowed) {
  return {
    logical_work_id: id, attempt_no: 1, conversation_id: 'conv-ts-kernel', turn_id: 'turn-1',
    context_messages: [{ role: 'user', content: 'from the TypeScript kernel' }],
    agent_context: { profile: 'main', allowed_tool_names: allowed },
    model_context: { likely_model: 'gpt-test' },
    tool_call: toolCall,
  };
}

async function until(what, check, ms = 30000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
    await sleep(100);
  }
}

try {
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });

  // One tool call, start to result.
  const calc = await client.workflow.execute('ExecuteAssignment', {
    taskQueue, workflowId: prefix + '-calc',
    args: [assignment(prefix + '-calc', { call_id: 'call-1', tool_name: 'calculator', arguments: { expression: '6 * 7' } }, ['calculator'])],
  });
  emit({ event: 'calculator', result: calc });

  // A call that needs a person's permission: the kernel answers it.
  const asking = await client.workflow.start('ExecuteAssignment', {
    taskQueue, workflowId: prefix + '-ask',
    args: [assignment(prefix + '-ask', { call_id: 'ask-ts-1', tool_name: 'calculator', arguments: { expression: '2 ** 8' } }, ['calculator'])],
  });
  const pending = await until('the pending permission', async () => {
    const list = await asking.query('pending_permissions');
    return list.length > 0 ? list : null;
  });
  emit({ event: 'pending', pending });
  const decided = await asking.executeUpdate('decide_permission', {
    args: [{ call_id: 'ask-ts-1', decision: 'allow', reason: 'the TypeScript kernel allows it', decided_by: 'ts-kernel' }],
  });
  emit({ event: 'decided', decided });
  emit({ event: 'asked', result: await asking.result() });

  // A command that runs until the kernel cancels it.
  const long = await client.workflow.start('ExecuteAssignment', {
    taskQueue, workflowId: prefix + '-cancel',
    args: [assignment(prefix + '-cancel', { call_id: 'call-long', tool_name: 'exec_command', arguments: { command_line: 'while true; do echo tick; sleep 0.2; done', timeout_seconds: 120 } }, ['exec_command'])],
  });
  await until('the command\'s first output', async () => {
    const reports = await long.query('reports');
    return reports.some((r) => r.phase === 'tool_output');
  });
  await long.signal('cancel', { reason: 'the user pressed stop' });
  emit({ event: 'canceled', result: await long.result() });
  await connection.close();
} catch (err) {
  emit({ event: 'fatal', message: String(err && err.stack || err) });
  process.exitCode = 1;
}
