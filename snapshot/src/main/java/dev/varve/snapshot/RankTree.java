package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Thresher's rank tree: which declared snapshots a {@link RankTreePolicy} keeps. A snapshot of rank r counts at
 * levels 1..r (RT1) and lives while any of those levels keeps it, so a higher rank lives at least as long (RT2);
 * within a level, keepLast keeps the newest (RT3) and keepFor the recent. Pure: the same declarations and time give
 * the same answer.
 */
final class RankTree {
    private final RankTreePolicy policy;
    /** Lowest level that keeps everything: a snapshot counted there never drops (k + 1 when no level does). */
    private final int keepAllFrom;

    RankTree(RankTreePolicy policy) {
        this.policy = policy;
        int first = policy.levelCount() + 1;
        for (int i = policy.levelCount(); i >= 1; i--) if (policy.levels().get(i - 1).kind() == Retention.Kind.ALL) first = i;
        this.keepAllFrom = first;
    }

    /** True when no snapshot can ever drop (every level 1 keeps everything, the default): nothing to evaluate. */
    boolean keepsEverything() {
        return keepAllFrom == 1;
    }

    int levels() {
        return policy.levelCount();
    }

    /** A snapshot the policy no longer keeps, with the rule of each of its levels that let it go. */
    record Verdict(long id, String why) {
    }

    /** The snapshots among {@code live} (ascending ids) that no level up to their rank keeps at {@code nowMillis}. */
    List<Verdict> drops(Collection<SnapshotRecord> live, long nowMillis) {
        if (keepsEverything()) return List.of();
        int k = policy.levelCount();
        Map<Long, Integer> keptBy = new HashMap<>();
        for (int level = 1; level <= k; level++) {
            Retention rule = policy.levels().get(level - 1);
            List<SnapshotRecord> counted = new ArrayList<>();
            for (SnapshotRecord r : live) if (Math.min(r.rank(), k) >= level) counted.add(r);
            for (int i = 0; i < counted.size(); i++) {
                SnapshotRecord r = counted.get(i);
                if (keeps(rule, counted.size() - 1 - i, r, nowMillis)) keptBy.merge(r.id(), level, Math::max);
            }
        }
        List<Verdict> out = new ArrayList<>();
        for (SnapshotRecord r : live) {
            if (keptBy.containsKey(r.id())) continue;
            StringBuilder why = new StringBuilder("no level up to its rank ").append(r.rank()).append(" keeps it (");
            for (int level = 1; level <= Math.min(r.rank(), k); level++) {
                if (level > 1) why.append(", ");
                why.append("level ").append(level).append(": ").append(policy.levels().get(level - 1));
            }
            out.add(new Verdict(r.id(), why.append(')').toString()));
        }
        return out;
    }

    /** Whether {@code rule} keeps a snapshot that has {@code newer} newer snapshots at its level. */
    private static boolean keeps(Retention rule, int newer, SnapshotRecord r, long nowMillis) {
        switch (rule.kind()) {
            case LAST: return newer < rule.count();
            case FOR: return nowMillis - r.declaredMillis() <= rule.age().toMillis();
            default: return true;
        }
    }
}
