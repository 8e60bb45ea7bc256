package dev.varve.checkpoint;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DamageSink;
import dev.varve.core.store.PageFileStamp;
import dev.varve.core.store.PageStore;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Whose page files these are and how recent each must be, so that a page file put back from an earlier backup (a
 * rollback) or copied in from another store is refused instead of served, as a database id and a checkpoint number
 * in every datafile header are checked against the control file.
 *
 * <p>A store has a random 64-bit id, chosen when it is created (or when this build first opens a store of an earlier
 * one) and durable in every checkpoint marker from its first start marker on, which is written before any page file
 * is. A page file carries it in its header, and the generation: the id of the last checkpoint whose page writes
 * reached it. Every end marker carries the table of page file id to generation for every file a completed
 * checkpoint wrote; the checkpointer keeps it here, loaded at open from the latest end marker.
 *
 * <p>{@link #check} runs at open before anything is written, and by {@code varve verify}: a file of another store, a
 * file older than the table says (rolled back), a file newer than every checkpoint that started, a file a completed
 * checkpoint wrote but the table does not list or lists with another checkpoint, and a file the table lists but which
 * is gone are refused. A file no
 * checkpoint wrote yet (generation 0: created after the last complete checkpoint, or a loaded image's) is not in the
 * table and passes; so does a file that the interrupted checkpoint wrote, whose restore lists it.
 */
public final class PageFileGenerations {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final long storeId;
    private final boolean durable;
    // guarded by the checkpointer's run lock (one checkpoint or restore at a time)
    private Map<Integer, Long> table;
    /** Files the interrupted checkpoint stamped before the crash: its restore lists them. */
    private final Map<Integer, Long> interrupted = new HashMap<>();
    private final long latestStartId;
    private final long latestEndId;

    private PageFileGenerations(long storeId, boolean durable, Map<Integer, Long> table, long latestStartId, long latestEndId) {
        this.storeId = storeId;
        this.durable = durable;
        this.table = table;
        this.latestStartId = latestStartId;
        this.latestEndId = latestEndId;
    }

    /** A new store's: a new id, nothing written. */
    public static PageFileGenerations fresh() {
        return new PageFileGenerations(newStoreId(), false, Map.of(), 0, 0);
    }

    /**
     * What the markers say: the store id of the latest start marker (or of the latest end marker), else a new one,
     * not durable until the next marker; the table of the latest end marker.
     *
     * @param latestStart the latest start marker, null when no checkpoint ever started
     */
    public static PageFileGenerations load(CheckpointMarkers markers, CheckpointMarker latestStart) {
        long endId = markers.latestEnd();
        CheckpointMarker end = endId < 0 ? null : markers.end(endId).orElse(null);
        long id = latestStart != null && latestStart.storeId() != 0 ? latestStart.storeId() : end != null ? end.storeId() : 0;
        // a version 1 end marker lists nothing: every file stamped since was stamped by a later checkpoint than it
        Map<Integer, Long> table = end == null || end.generations() == null ? Map.of() : end.generations();
        return new PageFileGenerations(id != 0 ? id : newStoreId(), id != 0, table, latestStart == null ? 0 : latestStart.id(), Math.max(endId, 0));
    }

    /** The store id the markers name, 0 when none does (a new store, or one of an earlier build not yet checkpointed). */
    public static long durableStoreId(CheckpointMarkers markers) {
        CheckpointMarker start = markers.latestStart().orElse(null);
        return load(markers, start).durableId();
    }

    private static long newStoreId() {
        long id;
        do id = RANDOM.nextLong(); while (id == 0);
        return id;
    }

    /** The store's id (in the next marker if not yet durable). */
    public long storeId() {
        return storeId;
    }

    /** The store's id if a marker already holds it, else 0. */
    public long durableId() {
        return durable ? storeId : 0;
    }

    /** The table after checkpoint {@code checkpointId} wrote (and stamped) {@code files}; not kept until {@link #commit}. */
    Map<Integer, Long> after(long checkpointId, Collection<Integer> files) {
        Map<Integer, Long> next = new TreeMap<>(table);
        next.putAll(interrupted);
        for (int f : files) next.put(f, checkpointId);
        return next;
    }

    /** The end marker holding {@code next} is written. */
    void commit(Map<Integer, Long> next) {
        table = Map.copyOf(next);
        interrupted.clear();
    }

    /**
     * Checks every page file of {@code store} against the table and the markers; each refusal goes to {@code sink}
     * naming the file. A file whose header is damaged (or of a newer format) goes there too with {@code headers},
     * else it is left to the page checks that report it.
     */
    public void check(PageStore store, DamageSink sink, boolean headers) {
        List<Integer> ids = new ArrayList<>(store.fileIds());
        java.util.Set<Integer> present = new java.util.HashSet<>(ids);
        ids.sort(null);
        long expected = durableId();
        for (int fileId : ids) {
            java.nio.file.Path path = store.pathOf(fileId);
            PageFileStamp s;
            try {
                s = store.stamp(fileId);
            } catch (CorruptionException e) {
                if (headers) sink.damage(path, e.offset(), e.what());
                continue;
            }
            Long listed = table.get(fileId);
            long g = s.generation();
            if (g < 0) {
                sink.damage(path, 256, "both generation slots of the page file header are damaged: which checkpoint last wrote it is unknown");
            } else if (expected != 0 && s.storeId() != 0 && s.storeId() != expected) {
                sink.damage(path, 0, "page file belongs to another store (store id " + hex(s.storeId()) + ", this store's " + hex(expected)
                        + "): it was copied in from another store; restore the store as a whole from one backup");
            } else if (g > latestStartId) {
                sink.damage(path, 256, "page file was last written by checkpoint " + g + " but this store never started a checkpoint after "
                        + latestStartId + ": it is from another copy of the store");
            } else if (listed != null && g < listed) {
                sink.damage(path, 256, "page file was last written by checkpoint " + g + " but the store's checkpoint " + latestEndId
                        + " records that checkpoint " + listed + " wrote it: restored from an earlier backup? Restore the store as a whole from one backup");
            } else if (listed != null && g > listed && g <= latestEndId) {
                // every checkpoint's end marker lists the files it stamped, and the table keeps the latest: a completed
                // checkpoint that stamped this file would be what the table says
                sink.damage(path, 256, "page file was last written by checkpoint " + g + " but the store's checkpoint " + latestEndId
                        + " records that checkpoint " + listed + " wrote it last: it is from another copy of the store");
            } else if (listed == null && g > 0 && g <= latestEndId) {
                sink.damage(path, 256, "page file was last written by checkpoint " + g + " but the store's checkpoint " + latestEndId
                        + " does not list it among the files its checkpoints wrote: it is from another copy of the store");
            } else if (g > latestEndId) {
                interrupted.put(fileId, g); // written by the interrupted checkpoint, whose restore lists it
            }
        }
        for (Map.Entry<Integer, Long> e : table.entrySet()) {
            if (!present.contains(e.getKey()))
                sink.damage(store.pathOf(e.getKey()), 0, "page file is missing, but checkpoint " + e.getValue() + " wrote it");
        }
    }

    /** {@link #check}, refusing at the first problem with a {@link CorruptionException} naming the file. */
    public void refuseUnsound(PageStore store) {
        check(store, (file, offset, what) -> {
            throw new CorruptionException(what, file, offset);
        }, true);
    }

    private static String hex(long id) {
        return String.format("%016x", id);
    }
}
