import { useState } from "preact/hooks";
import { ApiError, Delivery, rpc, type FieldProblem } from "../../api";
import { Notice } from "../../components";
import { problemsOfTexts } from "../../fields";
import {
  draftOfMapping,
  isKeyOfMapping,
  MAX_ACTION_MAPPINGS,
  mappingKeys,
  mappingOf,
  mappingsOf,
  newMapping,
  placeTestProblems,
  type MappingDraft,
} from "./actions-draft";
import { MappingEditor } from "./mapping-editor";
import type { TestOutcome } from "./mapping-test";
import type { SetupProps } from "./setup";
import { DestinationFields, SetupActions, SigningFields, SourceConnections, useSetupForm } from "./setup-form";
import { TestCallFields, useTestCall } from "./test-call";

/**
 * The Webhooks (Actions) setup form, the mapping editor: 1-20 mappings, each with its trigger and
 * its request (URL, method, headers, data, batching), each previewed or sent once against a test
 * call; then the secrets, the rate limit and the sources, as every kind has them.
 */
export function ActionsSetup(props: SetupProps) {
  const { existing } = props;
  const form = useSetupForm(props);
  const testCall = useTestCall(props.sources, form.draft.selectedSources);
  const [mappings, setMappings] = useState<MappingDraft[]>(() => {
    const read = mappingsOf(existing);
    return read.length > 0 ? read.map(draftOfMapping) : [newMapping([])];
  });

  // Errors name mappings by place: once places change, they would be shown at other mappings.
  const clearMappingErrors = () =>
    form.setErrors((errors) => ({
      byField: new Map([...errors.byField].filter(([key]) => !key.startsWith("mappings"))),
      general: errors.general,
    }));
  const setErrorsOfMapping = (index: number, byField: Map<string, string>) =>
    form.setErrors((errors) => ({
      byField: new Map([...[...errors.byField].filter(([key]) => !isKeyOfMapping(key, index)), ...byField]),
      general: errors.general,
    }));
  const change = (index: number, draft: MappingDraft) => setMappings((all) => all.map((mapping, i) => (i === index ? draft : mapping)));
  const remove = (index: number) => {
    setMappings((all) => all.filter((_, i) => i !== index));
    clearMappingErrors();
  };
  const move = (index: number, by: -1 | 1) => {
    setMappings((all) => {
      const moved = [...all];
      const [mapping] = moved.splice(index, 1);
      moved.splice(index + by, 0, mapping!);
      return moved;
    });
    clearMappingErrors();
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    const problems = new Map<string, string>();
    const built = mappings.map((draft, index) => {
      const { mapping, problems: own } = mappingOf(draft);
      for (const [key, message] of own) problems.set(`mappings.${index}.${key}`, message);
      return mapping;
    });
    await form.save({
      settings: { webhooksActionsKind: { mappings: built } },
      problems,
      keys: new Set(["mappings", ...mappings.flatMap((draft, index) => mappingKeys(draft, index))]),
    });
  };

  const test = async (index: number, send: boolean): Promise<TestOutcome> => {
    const draft = mappings[index]!;
    const known = new Set(mappingKeys(draft, index));
    const { mapping, problems } = mappingOf(draft);
    setErrorsOfMapping(index, new Map([...problems].map(([key, message]) => [`mappings.${index}.${key}`, message])));
    const call = testCall.parse();
    if (problems.size > 0 || !call) return { kind: "refused", messages: call ? [] : ["the test call is not valid (see Test call)"] };
    // The problems the service names, at the fields they name: "mapping.<field>" of this mapping, "call..." of the test call.
    const place = (named: FieldProblem[]): TestOutcome | undefined => {
      const placed = placeTestProblems(named, index, known);
      setErrorsOfMapping(index, placed.byField);
      testCall.setError(placed.call.length > 0 ? `The service refused the test call: ${placed.call.join("; ")}` : undefined);
      if (placed.byField.size === 0 && placed.call.length === 0) return undefined;
      return {
        kind: "refused",
        messages: [...placed.other, ...(placed.call.length > 0 ? ["the test call is refused (see Test call)"] : [])],
      };
    };
    try {
      const answer = await rpc(Delivery("TestActionMapping"), { destinationId: existing?.id ?? "", mapping, call, send });
      const named = problemsOfTexts(answer.problems ?? []);
      const refused = place(named);
      if (named.length === 0) return { kind: "answered", sent: send, answer };
      return refused ?? { kind: "refused", messages: answer.problems ?? [] };
    } catch (caught) {
      if (!(caught instanceof ApiError)) throw caught;
      if (caught.code === "UNIMPLEMENTED")
        return { kind: "failed", message: "The delivery service cannot test mappings (it answers UNIMPLEMENTED): it needs updating." };
      return place(caught.fields) ?? { kind: "failed", message: caught.message };
    }
  };

  return (
    <form class="setup" onSubmit={(event) => void submit(event)} noValidate>
      {form.errors.general && <Notice kind="error">{form.errors.general}</Notice>}
      <DestinationFields
        form={form}
        rateLimitHint="All mappings and delivery replicas together, 1-100000. Empty or 0: no limit. Calls over the limit wait their turn; none is dropped."
      />
      <TestCallFields testCall={testCall} />
      <fieldset>
        <legend>Mappings</legend>
        <p class="hint">
          A call goes to every enabled mapping whose trigger takes it, in this order: each makes its own request (or puts the call in its
          batch), retried on its own. A call no mapping takes counts as filtered.
        </p>
        {form.error("mappings") && <p class="field-error">{form.error("mappings")}</p>}
        {mappings.map((draft, index) => (
          <MappingEditor
            key={draft.key}
            draft={draft}
            index={index}
            count={mappings.length}
            error={form.error}
            onChange={(changed) => change(index, changed)}
            onRemove={() => remove(index)}
            onMove={(by) => move(index, by)}
            onTest={(send) => test(index, send)}
            unsaved={existing === undefined}
          />
        ))}
        {mappings.length < MAX_ACTION_MAPPINGS && (
          <button type="button" class="secondary" onClick={() => setMappings((all) => [...all, newMapping(all)])}>
            Add a mapping
          </button>
        )}
      </fieldset>
      <SigningFields form={form} />
      <SourceConnections form={form} />
      <SetupActions form={form} />
    </form>
  );
}
