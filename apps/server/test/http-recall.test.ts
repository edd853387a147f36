import { describe, expect, it } from "vitest";
import { ANA, CARLA, HARBOR, hostPerTest, SUNRISE, turn } from "./helpers.js";

const startHost = hostPerTest();
const BRUNO = "p-1002";

describe("the clinic remembers a patient across sessions (issue 18), over HTTP with the offline demo model", () => {
  it("an allergy told in one session is recalled in the next, for that patient only", async () => {
    const t = await startHost({ memory: true });
    const memory = t.host.context.runtime.stores;
    const ana = await t.token(SUNRISE, ANA);
    const told = await turn(t, ana, "monday-chat", "k1", "Hello, I am allergic to amoxicillin.");
    expect(told.status).toBe(200);
    expect(told.body).toMatchObject({
      status: "completed",
      text: "Thank you, I have noted that you are allergic to amoxicillin.",
    });

    // What the extraction wrote: one fact and one episode, Ana's own, at the chat's sensitivity.
    const facts = (await memory.profiles.list({ org: SUNRISE, uid: ANA })).items;
    expect(
      facts.map((f) => ({
        key: f.key,
        text: f.text,
        sensitivity: f.sensitivity,
        session: f.source.sessionId,
      })),
    ).toEqual([
      {
        key: "allergy.amoxicillin",
        text: "Allergic to amoxicillin.",
        sensitivity: "confidential",
        session: "monday-chat",
      },
    ]);
    expect((await memory.episodes.list({ org: SUNRISE, uid: ANA })).items).toHaveLength(1);

    const later = await turn(t, ana, "friday-chat", "k2", "Do you remember my allergy?");
    expect(later.status).toBe(200);
    expect(later.body.text).toBe(
      "From our earlier conversations I remember: Allergic to amoxicillin.",
    );

    // Another patient of the same clinic, and a patient of another clinic, remember nothing of Ana.
    const bruno = await turn(
      t,
      await t.token(SUNRISE, BRUNO),
      "friday-chat",
      "k3",
      "Do you remember my allergy?",
    );
    expect(bruno.body.text).toBe("I do not remember anything from earlier conversations.");
    const carla = await turn(
      t,
      await t.token(HARBOR, CARLA),
      "friday-chat",
      "k4",
      "Do you remember my allergy?",
    );
    expect(carla.body.text).toBe("I do not remember anything from earlier conversations.");
    expect((await memory.profiles.list({ org: SUNRISE, uid: BRUNO })).items).toEqual([]);
  });

  it("without memory the agent forgets: the same two sessions recall nothing", async () => {
    const t = await startHost();
    const ana = await t.token(SUNRISE, ANA);
    await turn(t, ana, "monday-chat", "k1", "Hello, I am allergic to amoxicillin.");
    const later = await turn(t, ana, "friday-chat", "k2", "Do you remember my allergy?");
    expect(later.body.text).toBe("I do not remember anything from earlier conversations.");
  });
});
