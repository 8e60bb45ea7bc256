package dev.varve.cli;

import dev.varve.core.io.CorruptionException;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve snapshots DIR}: live and dropped snapshots. */
@Command(name = "snapshots", mixinStandardHelpOptions = true,
        description = {"Live snapshots with rank, declaration time, WAL LSN (of the declaration or latest raise), archive bytes attributed, "
                + "the retention rule that keeps them and whether it pins them (keepAll, no budget) — by the policy the store recorded, or "
                + "--config's; dropped snapshots with when and by which rules. Read-only."})
final class SnapshotsCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() {
        Map<String, Object> r = new LinkedHashMap<>();
        String policyUnknown = policyUnknown();
        boolean policyKnown = policyUnknown == null;
        if (!policyKnown) r.put("retention", policyUnknown);
        try (Varve v = store.openReadOnly()) {
            List<Map<String, Object>> live = new ArrayList<>();
            for (StoreInspector.SnapshotDetail d : StoreInspector.snapshots(v)) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("id", d.id());
                m.put("rank", d.rank());
                m.put("declared", d.declared().toString());
                m.put("walLsn", d.walLsn());
                m.put("archiveBytes", d.archiveBytes());
                if (policyKnown) {
                    m.put("keptBy", d.keptBy());
                    m.put("pinned", d.pinned());
                }
                live.add(m);
            }
            List<Map<String, Object>> dropped = new ArrayList<>();
            for (StoreInspector.DroppedDetail d : StoreInspector.dropped(v)) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("id", d.id());
                m.put("dropped", d.dropped().toString());
                m.put("why", d.why());
                dropped.add(m);
            }
            r.put("live", live);
            r.put("dropped", dropped);
            StoreInspector.droppedBefore(v).ifPresent(d -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("below", d.below());
                m.put("by", d.by().toString());
                r.put("droppedBefore", m); // each one not listed as live dropped, when and why no longer kept: the logs keep the live snapshots' records
            });
        }
        output.print(r);
        return Main.OK;
    }

    /**
     * Why the rule that keeps each snapshot is unknown, or null when it is known. A store records its policy when
     * opened for writing; one of an earlier build does not, and a damaged record is no rule either (verify reports it
     * as damage; the listing carries on as the other read commands do): then only the store's configuration tells.
     */
    private String policyUnknown() {
        if (store.layout.config != null) return null;
        String ask = "give --config with the store's varve.retention to see the rule that keeps each snapshot";
        try {
            return StoreInspector.recordedRetention(store.layout.archiveOf(store.dir)).isPresent() ? null : "unknown: " + ask;
        } catch (CorruptionException e) {
            return "unknown: the recorded policy is damaged (" + e.getMessage() + "); " + ask;
        }
    }
}
