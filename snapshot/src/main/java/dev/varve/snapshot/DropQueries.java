package dev.varve.snapshot;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What was dropped and why, as the archive answers it: recent drops from the registry's memory, older ones from the
 * drop log, and those below the drop horizon as dropped by the horizon's time. The drop log is read outside the
 * state lock, which every capture takes: it holds a drop per snapshot ever dropped, and a scan of it under that lock
 * stalled every writer for as long.
 */
final class DropQueries {
    private final ArchiveLock lock;
    private final SnapshotRegistry registry;

    DropQueries(ArchiveLock lock, SnapshotRegistry registry) {
        this.lock = lock;
        this.registry = registry;
    }

    /** Why {@code id} is no longer live, or null if it is live or was never declared. */
    DroppedSnapshot dropped(long id) {
        MaplogFile log;
        long end;
        lock.lock();
        try {
            if (!registry.drops().inDropLog(id)) return registry.drops().dropped(id); // a recent drop, a live snapshot or none: memory answers
            log = registry.drops().dropLog();
            end = log.count(); // id is not live, so its drop is among these entries
        } finally {
            lock.unlock();
        }
        // An old drop is looked for in the drop log outside the state lock: the log holds a drop per snapshot ever
        // dropped, and a scan of it under the lock every capture takes stalled every writer for as long (0.5 s with
        // 600,000 drops, growing with the store's history). Entries before end never change; each chunk's read holds
        // only the log's own monitor, which an append waits out for one chunk at most.
        DroppedSnapshot found = DropLogLookup.find(log, id, end);
        if (found != null || id >= registry.drops().dropHorizon()) return found;
        lock.lock(); // not in the log (any more): the horizon answers, from memory
        try {
            return registry.drops().forgotten(id);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Every drop the archive still details, by id: those the drop log holds (from
     * {@link RegistryDrops#dropHorizon}, and the most recent ones below it), each as {@link #dropped} tells it.
     * Reads the log once, outside the state lock.
     */
    List<DroppedSnapshot> detailedDrops() {
        MaplogFile log;
        long end;
        lock.lock();
        try {
            log = registry.drops().dropLog();
            end = log.count();
        } finally {
            lock.unlock();
        }
        List<DroppedSnapshot> all = DropLogLookup.all(log, end);
        lock.lock();
        try {
            all.replaceAll(d -> Objects.requireNonNullElse(registry.drops().recentDrop(d.id()), d)); // a recent one says why in full
        } finally {
            lock.unlock();
        }
        return all;
    }

    /**
     * The drops of the {@code max} latest dropped snapshots, newest first, each as {@link #dropped} tells it: the
     * recent ones from memory while they answer, then those the drop log details, and below
     * {@link RegistryDrops#dropHorizon} the others as dropped by the horizon's time. Reads the log once, and only when memory does not answer (a
     * {@link #dropped} per id scanned it per id: minutes over a million compacted drops; the admin endpoint asks for
     * the latest 200 every time the dashboard refreshes).
     */
    List<DroppedSnapshot> latestDrops(int max) {
        List<DroppedSnapshot> out = new ArrayList<>();
        long from; // the newest id memory did not answer
        lock.lock();
        try {
            for (from = registry.latest(); from >= 1 && out.size() < max; from--) {
                if (registry.find(from) != null) continue;
                DroppedSnapshot recent = registry.drops().recentDrop(from);
                if (recent == null) break;
                out.add(recent);
            }
        } finally {
            lock.unlock();
        }
        if (from < 1 || out.size() == max) return out;
        List<DroppedSnapshot> detailed = detailedDrops(); // by id
        int i = detailed.size() - 1;
        while (i >= 0 && detailed.get(i).id() > from) i--;
        lock.lock();
        try {
            long horizon = registry.drops().dropHorizon();
            while (i >= 0 && out.size() < max && detailed.get(i).id() >= horizon) out.add(detailed.get(i--)); // the others are live
            for (long id = Math.min(from, horizon - 1); id >= 1 && out.size() < max; id--) { // every one below the horizon not live was dropped
                if (i >= 0 && detailed.get(i).id() == id) out.add(detailed.get(i--));
                else if (registry.find(id) == null) out.add(registry.drops().forgotten(id)); // a live one kept its records
            }
        } finally {
            lock.unlock();
        }
        return out;
    }
}
