package dev.varve.infinispan;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.FileIOFactory;
import dev.varve.engine.Cursor;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The blocking half of {@link VarveStore}: one Varve store per cache holding two caller-placed tables with one
 * partition per segment, {@code entries} (marshalled key to {@link EntryCodec stored entry}) and {@code expiry}
 * (expiry time and key to nothing), plus the hash-placed {@code labels} table of cluster snapshot labels.
 *
 * <p>Every change of an entry and of its expiry-index entry is one atomic Varve write, so after any crash the index
 * holds exactly the entries that can expire. Writers of the same key are serialised by a striped lock, because
 * keeping the index exact needs the entry's previous expiry time (read, then written in the same batch).
 */
final class SegmentTables implements AutoCloseable {
    static final String ENTRIES = "entries";
    static final String EXPIRY = "expiry";
    static final String LABELS = "labels";
    private static final int STRIPES = 256;

    /** One write of a batch: a put when {@code stored != null}, else a remove. */
    record Change(int segment, byte[] key, byte[] stored) {
    }

    /** An entry removed by {@link #purge}: its key and stored form. */
    record Purged(byte[] key, byte[] stored) {
    }

    private final Varve store;
    private final Table entries;
    private final Table expiry;
    private final Table labels;
    private final ReentrantLock[] stripes = new ReentrantLock[STRIPES];

    /**
     * Opens (creating or recovering) the store of a cache with {@code segments} segments, its files through {@code io}.
     *
     * @throws IllegalArgumentException if the store was created for another segment count
     */
    SegmentTables(VarveConfig config, FileIOFactory io, int segments) {
        this.store = Varve.open(config, io);
        try {
            this.entries = store.table(ENTRIES, TableOptions.callerPlaced(segments));
            this.expiry = store.table(EXPIRY, TableOptions.callerPlaced(segments));
            this.labels = store.table(LABELS);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        for (int i = 0; i < STRIPES; i++) stripes[i] = new ReentrantLock();
    }

    private int stripe(int segment, byte[] key) {
        return (segment * 31 + Arrays.hashCode(key)) & (STRIPES - 1);
    }

    /** The stored entry of {@code key}; null when absent — as a key too long to be stored always is. */
    byte[] get(int segment, byte[] key) {
        if (key.length > maxKeyBytes()) return null;
        return entries.partition(segment).get(key);
    }

    /** The longest key this store holds: Varve's limit less the 8 bytes the expiry index adds to a key. */
    private int maxKeyBytes() {
        return store.maxKeyBytes() - 8;
    }

    /**
     * Rejects, before anything is written, an entry Varve cannot hold: the expiry index adds 8 bytes to the key.
     *
     * @throws IllegalArgumentException naming the size and the limit
     */
    private void checkSizes(Change c) {
        int maxKey = maxKeyBytes();
        if (c.key().length > maxKey) throw new IllegalArgumentException("marshalled key of " + c.key().length + " bytes exceeds the store's maximum of "
                + maxKey + " bytes (Varve's key limit, pageSize / 4, less the 8 bytes of the expiry index)");
        if (c.stored() != null && c.stored().length > Varve.MAX_VALUE_BYTES) throw new IllegalArgumentException("stored entry of " + c.stored().length
                + " bytes exceeds Varve's maximum value of " + Varve.MAX_VALUE_BYTES + " bytes");
    }

    /** Stores one entry (and moves its expiry-index entry) atomically. */
    void put(int segment, byte[] key, byte[] stored) {
        apply(List.of(new Change(segment, key, stored)));
    }

    /** Removes one entry and its expiry-index entry atomically; true when it was present. */
    boolean remove(int segment, byte[] key) {
        ReentrantLock lock = stripes[stripe(segment, key)];
        lock.lock();
        try {
            byte[] old = get(segment, key);
            if (old == null) return false;
            long oldExpiry = EntryCodec.expiryTime(old);
            store.write(b -> {
                b.remove(ENTRIES, segment, key);
                if (oldExpiry > -1) b.remove(EXPIRY, segment, EntryCodec.expiryKey(oldExpiry, key));
            });
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Applies puts and removes, in order, with the expiry-index changes they imply: as one atomic Varve write when
     * the batch fits one write (one WAL record, and at most half the data region), otherwise as consecutive atomic
     * writes of halves, each entry always together with its index entry. Sizes are checked first, so a bad entry
     * rejects the whole batch before anything is written (a remove of a key too long to be stored is dropped). The
     * stripes of every key are locked in ascending order, so concurrent batches cannot deadlock.
     */
    void apply(List<Change> batch) {
        // a key too long to be stored is never present, so its remove is a no-op (as remove() answers false for it)
        List<Change> changes = batch.stream().filter(c -> c.stored() != null || c.key().length <= maxKeyBytes()).toList();
        if (changes.isEmpty()) return;
        changes.forEach(this::checkSizes);
        TreeSet<Integer> held = new TreeSet<>();
        for (Change c : changes) held.add(stripe(c.segment(), c.key()));
        for (int s : held) stripes[s].lock();
        try {
            writeInPieces(changes);
        } finally {
            for (int s : held) stripes[s].unlock();
        }
    }

    private void writeInPieces(List<Change> changes) {
        try {
            writeAtomically(changes);
        } catch (IllegalArgumentException tooBigForOneWrite) { // sizes were checked: only the batch's total can be refused
            if (changes.size() == 1) throw tooBigForOneWrite;
            int half = changes.size() / 2;
            writeInPieces(changes.subList(0, half));
            writeInPieces(changes.subList(half, changes.size()));
        }
    }

    private void writeAtomically(List<Change> changes) {
        Map<String, Long> expiryNow = new HashMap<>(); // segment/key -> expiry as the batch goes, -1 immortal, null absent
        store.write(b -> {
            for (Change c : changes) {
                String id = c.segment() + "/" + Arrays.toString(c.key());
                Long before = expiryNow.containsKey(id) ? expiryNow.get(id) : storedExpiry(c.segment(), c.key());
                Long after = c.stored() == null ? null : EntryCodec.expiryTime(c.stored());
                if (c.stored() == null) b.remove(ENTRIES, c.segment(), c.key());
                else b.put(ENTRIES, c.segment(), c.key(), c.stored());
                if (before != null && before > -1 && !before.equals(after)) b.remove(EXPIRY, c.segment(), EntryCodec.expiryKey(before, c.key()));
                if (after != null && after > -1 && !after.equals(before)) b.put(EXPIRY, c.segment(), EntryCodec.expiryKey(after, c.key()), EntryCodec.EMPTY);
                expiryNow.put(id, after);
            }
        });
    }

    private Long storedExpiry(int segment, byte[] key) {
        byte[] old = get(segment, key);
        return old == null ? null : EntryCodec.expiryTime(old);
    }

    /**
     * Removes every entry of {@code segment} that has expired at {@code now}, found through the expiry index, each
     * together with its index entry in one atomic write; returns what it removed.
     */
    List<Purged> purge(int segment, long now) {
        List<byte[]> due = new ArrayList<>();
        try (Cursor c = expiry.partition(segment).scan(null, EntryCodec.expiryBound(now))) {
            while (c.next()) due.add(c.key());
        }
        List<Purged> out = new ArrayList<>(due.size());
        for (byte[] indexKey : due) {
            byte[] key = EntryCodec.keyOf(indexKey);
            ReentrantLock lock = stripes[stripe(segment, key)];
            lock.lock();
            try {
                // re-read under the lock: a writer may have given the key a new lifespan since the scan, and moved its
                // index entry with it; one still there is left from a crash during destroy (see there): drop it
                byte[] stored = get(segment, key);
                if (stored == null || EntryCodec.expiryTime(stored) != EntryCodec.expiryOf(indexKey)) {
                    expiry.partition(segment).remove(indexKey);
                    continue;
                }
                store.write(b -> b.remove(ENTRIES, segment, key).remove(EXPIRY, segment, indexKey));
                out.add(new Purged(key, stored));
            } finally {
                lock.unlock();
            }
        }
        return out;
    }

    /** Entries of {@code segment}, expired ones included. */
    long approximateSize(int segment) {
        return entries.partition(segment).size();
    }

    /** Entries of {@code segment} not expired at {@code now}: all entries minus those the expiry index says are due. */
    long size(int segment, long now) {
        long due = 0;
        try (Cursor c = expiry.partition(segment).scan(null, EntryCodec.expiryBound(now))) {
            while (c.next()) if (indexes(segment, c.key())) due++;
        }
        return entries.partition(segment).size() - due;
    }

    /**
     * Whether an index entry names a stored entry that expires then. Only a crash between {@link #destroy}'s two
     * destroys leaves one that does not (and a later put of its key does not see it, having no old entry to read).
     */
    private boolean indexes(int segment, byte[] indexKey) {
        byte[] stored = get(segment, EntryCodec.keyOf(indexKey));
        return stored != null && EntryCodec.expiryTime(stored) == EntryCodec.expiryOf(indexKey);
    }

    /** Entries of a segment in key order (the caller closes it). */
    Cursor scan(int segment) {
        return entries.partition(segment).scan(null, null);
    }

    /**
     * Drops a segment's entries and index: the O(1)-per-partition destroy, logged and atomic per table but not across
     * the two, so a crash between them leaves index entries without entries; {@link #purge} and {@link #size} pass
     * over those (the entries first: an entry left without its index entry would never be purged). Every stripe is
     * held meanwhile: a put landing between the two destroys would keep its entry and lose its index entry, and its
     * entry would then never expire.
     */
    void destroy(int segment) {
        for (ReentrantLock s : stripes) s.lock(); // ascending, as apply takes them
        try {
            entries.partition(segment).destroy();
            expiry.partition(segment).destroy();
        } finally {
            for (ReentrantLock s : stripes) s.unlock();
        }
    }

    // ---------------------------------------------------------------- history

    /**
     * Declares a Varve snapshot and records it under {@code label} together with {@code ownedSegments}, the
     * segments this node owned at that moment (what it can answer for later).
     *
     * @throws IllegalArgumentException if the label is already used in this store
     */
    long snapshot(String label, int[] ownedSegments) {
        byte[] name = labelKey(label);
        synchronized (labels) {
            if (labels.get(name) != null) throw new IllegalArgumentException("snapshot label '" + label + "' is already used");
            long id = store.snapshotNow();
            ByteBuffer v = ByteBuffer.allocate(8 + 4 + 4 * ownedSegments.length).order(ByteOrder.LITTLE_ENDIAN).putLong(id).putInt(ownedSegments.length);
            for (int s : ownedSegments) v.putInt(s);
            labels.put(name, v.array());
            return id;
        }
    }

    /**
     * A label's key in the labels table.
     *
     * @throws IllegalArgumentException naming the label's size when it is longer than a Varve key may be
     */
    private byte[] labelKey(String label) {
        byte[] name = label.getBytes(StandardCharsets.UTF_8);
        if (name.length > store.maxKeyBytes()) throw new IllegalArgumentException("snapshot label of " + name.length
                + " bytes (UTF-8) exceeds the maximum of " + store.maxKeyBytes() + " bytes (Varve's key limit, pageSize / 4)");
        return name;
    }

    /** A labelled snapshot: its Varve id and the segments the node owned when it was declared. */
    record Labelled(long snapshot, int[] ownedSegments) {
    }

    /** The snapshot recorded under {@code label}, or null. */
    Labelled labelled(String label) {
        byte[] v = labels.get(labelKey(label));
        if (v == null) return null;
        ByteBuffer b = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
        long id = b.getLong();
        int[] owned = new int[b.getInt()];
        for (int i = 0; i < owned.length; i++) owned[i] = b.getInt();
        return new Labelled(id, owned);
    }

    /** A read-only view of the store as of snapshot {@code id} (the caller closes it). */
    SnapshotView asOf(long id) {
        return store.asOf(id);
    }

    /** What stopped the store (a full disk, an I/O error, a failed checkpoint), or null while it is sound. */
    String failure() {
        return store.metrics().failure();
    }

    /**
     * Writes every dirty page and waits for it: after a recovery, the checkpoint it owes, the first thing a reopened
     * store writes besides its WAL; throws what failed.
     */
    void checkpoint() {
        try {
            store.checkpoint().join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    @Override
    public void close() {
        store.close();
    }
}
