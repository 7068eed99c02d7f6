// Evaluates a batch of IAM requests with @cloud-copilot/iam-simulate (dev-only, AGPL-3.0; never shipped).
// stdin: a JSON array of {id, principal, action, resource, account, context, identityPolicies, resourcePolicy}.
// stdout: a JSON array of {id, result, errors?, decisive?}, in the same order.
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const requests = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const decisive = (analysis) => {
  if (!analysis) return undefined
  const sids = []
  for (const part of ['identityAnalysis', 'resourceAnalysis']) {
    const a = analysis[part]
    if (!a) continue
    for (const kind of ['allowStatements', 'denyStatements']) {
      for (const s of a[kind] ?? []) sids.push(`${part.replace('Analysis', '')}:${kind.replace('Statements', '')}:${s.explain?.identifier ?? s.statement?.sid ?? '?'}`)
    }
  }
  return sids
}

const results = []
for (const r of requests) {
  const simulation = {
    request: {
      principal: r.principal,
      action: r.action,
      resource: { resource: r.resource, accountId: r.account },
      contextVariables: r.context ?? {},
    },
    identityPolicies: (r.identityPolicies ?? []).map((policy, i) => ({ name: `p${i}`, policy })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: r.resourcePolicy ?? undefined,
  }
  const response = await runSimulation(simulation, {})
  if (response.resultType === 'error') {
    results.push({ id: r.id, result: 'Error', errors: response.errors })
  } else {
    const analysis = response.resultType === 'single' ? response.result.analysis : undefined
    results.push({ id: r.id, result: response.overallResult, decisive: decisive(analysis) })
  }
}
process.stdout.write(JSON.stringify(results))
