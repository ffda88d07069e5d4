/**
 * Model-based test of the app machine (design.md §3): the shortest path to every transition of
 * the machine's graph is walked against the real AppRegistry and supervisor, and the real system
 * must show what the model says after every step. A separate test fails when any transition of
 * the chart is left out of the walked paths.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  initialTransition,
  transition,
  type AnyTransitionDefinition,
  type AnyStateNode,
} from 'xstate';
import { createTestModel } from 'xstate/graph';
import {
  appMachine,
  type AppEffect,
  type AppMachineEvent,
} from '../../src/machines/app-machine.js';
import { useFakeClock } from '../actors/harness.js';
import {
  INPUT,
  abstract,
  concretize,
  eventsFor,
  type Labelled,
  type ModelSnapshot,
} from './app-model.js';
import { AppSut } from './app-sut.js';

const model = createTestModel(appMachine, {
  input: INPUT,
  events: (snapshot) => eventsFor(snapshot),
  // Bare `{type}` events the model adds for types we did not offer cannot happen for real.
  filterEvents: (_snapshot, event) => 'label' in event,
  serializeEvent: (event) => (event as Labelled).label ?? event.type,
  // A node per (state, arriving edge): a shortest path to every node walks every edge.
  serializeState: (snapshot, event, previous) =>
    abstract(snapshot.value, snapshot.context) +
    (event && previous
      ? ` via ${(event as Labelled).label} from ${abstract(previous.value, previous.context)}`
      : ''),
});
const paths = model.getShortestPaths();

/** The labels a path walks, skipping the initial `xstate.init` step. */
const labelsOf = (path: (typeof paths)[number]): string[] =>
  path.steps.flatMap((s) => ('label' in s.event ? [(s.event as Labelled).label] : []));

interface Step {
  label: string;
  event: AppMachineEvent;
  before: ModelSnapshot;
  after: ModelSnapshot;
  effects: AppEffect[];
}

/** Replays a path on the pure machine, making each labelled event against the model's own state. */
function replay(labels: string[]): { initial: ModelSnapshot; steps: Step[] } {
  const [initial] = initialTransition(appMachine, INPUT);
  let before = initial;
  const steps = labels.map((label) => {
    const event = concretize(label, before);
    const [after, actions] = transition(appMachine, before, event);
    const step = { label, event, before, after, effects: emitted(actions) };
    before = after;
    return step;
  });
  return { initial, steps };
}

/** The effects a pure transition emitted, read from its executable actions. */
function emitted(actions: ReadonlyArray<{ type: string; params?: unknown }>): AppEffect[] {
  return actions.flatMap((a) =>
    a.type === 'xstate.emit' ? [(a.params as { event: AppEffect }).event] : [],
  );
}

function allTransitions(node: AnyStateNode): AnyTransitionDefinition[] {
  const own = [...node.transitions.values()].flat();
  return [...own, ...Object.values(node.states).flatMap(allTransitions)];
}

const describeTransition = (t: AnyTransitionDefinition): string =>
  `${t.source.id} --${t.eventType}${t.guard ? ` [${JSON.stringify(t.guard)}]` : ''}--> ${t.target?.map((n) => n.id).join(',') ?? '(stays)'}`;

// The model's registry keeps nothing warm (test/actors/warm-keep.test.ts covers keeping), so a
// retired sandbox is reaped at once, like a reaped one.
const effectsSummary = (effects: AppEffect[]) => ({
  reaps: effects.filter((e) => e.type === 'reap' || e.type === 'retire').length,
  notices: effects.flatMap((e) => (e.type === 'notify' ? [`${e.kind}:${e.initiator}`] : [])),
  notes: effects.flatMap((e) => (e.type === 'note' ? [`[slipway] ${e.text}`] : [])),
});

/**
 * The supervisor's own note, not the machine's: as a redeploy's candidate turns healthy while
 * another release serves, it says the traffic moves (issue 29's `switching` step) before the
 * machine's notes of the move.
 */
const switchNote = (step: { label: string; before: ModelSnapshot }): string[] =>
  step.label === 'HEALTHY' &&
  String(step.before.value) === 'Starting' &&
  step.before.context.serving !== null
    ? [`[slipway] switching traffic to version ${step.before.context.version}`]
    : [];

describe('app machine model', () => {
  it('has paths to walk', () => {
    expect(paths.length).toBeGreaterThan(20);
  });

  it('walks every transition of the chart', () => {
    const covered = new Set<AnyTransitionDefinition>();
    for (const path of paths) {
      for (const step of replay(labelsOf(path)).steps) {
        for (const t of appMachine.getTransitionData(step.before, step.event)) covered.add(t);
      }
    }
    const missing = allTransitions(appMachine.root).filter((t) => !covered.has(t));
    expect(missing.map(describeTransition)).toEqual([]);
  });

  it('replays each path to the state the model reached', () => {
    for (const path of paths) {
      const { initial, steps } = replay(labelsOf(path));
      const last = steps.at(-1)?.after ?? initial;
      expect(abstract(last.value, last.context)).toBe(
        abstract(path.state.value, path.state.context),
      );
    }
  });
});

describe('the real registry follows the model', () => {
  beforeEach(useFakeClock);
  afterEach(() => void vi.useRealTimers());

  for (const path of paths) {
    const labels = labelsOf(path);
    it(`${labels.join(' → ') || '(initial)'}`, async () => {
      const sut = new AppSut();
      const { initial, steps } = replay(labels);
      const [, initialActions] = initialTransition(appMachine, INPUT);
      await sut.begin();
      sut.check(initial, effectsSummary(emitted(initialActions)));
      for (const step of steps) {
        await sut.produce(step.label);
        try {
          const expected = effectsSummary(step.effects);
          sut.check(step.after, { ...expected, notes: [...switchNote(step), ...expected.notes] });
        } catch (err) {
          throw new Error(
            `after ${step.label} (${String(step.before.value)} → ${String(step.after.value)}): ${String(err)}`,
          );
        }
      }
      await sut.drain(steps.at(-1)?.after ?? initial);
    });
  }
});
