package dev.varve.snapshot;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/** What the rank tree's replay tests share: a mark's clock as recovery reads it back, and a declaration replayed. */
final class RankTreeReplays {
    private RankTreeReplays() {
    }

    /** {@code clock} as a mark's group records it and recovery reads it back. */
    static PolicyClock recorded(PolicyClock clock) {
        List<Long> what = new ArrayList<>();
        List<Long> value = new ArrayList<>();
        clock.writeTo((key, v) -> {
            what.add(key);
            value.add(v);
        });
        return PolicyClock.read(what.stream().mapToLong(Long::longValue).toArray(), value.stream().mapToLong(Long::longValue).toArray());
    }

    /** Declares {@code r} on {@code tree} at its own time, no clock read, and drops what it lets go; returns their ids. */
    static List<Long> declare(RankTree tree, TreeMap<Long, SnapshotRecord> live, SnapshotRecord r) {
        live.put(r.id(), r);
        tree.add(r);
        List<Long> dropped = tree.drops(live::get, r.declaredMillis(), false).stream().map(RankTree.Verdict::id).toList();
        for (long id : dropped) tree.remove(live.remove(id));
        return dropped;
    }
}
