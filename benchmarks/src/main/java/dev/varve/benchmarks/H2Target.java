package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;
import org.h2.mvstore.FileStore;
import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * H2 MVStore: one file, auto-commit off, one {@link MVStore#commit()} per put or per batch (which writes a chunk to
 * the file: survives a process crash, like LOG_ONLY) plus {@link MVStore#sync()} after it for FSYNC. MVStore has no
 * separate WAL and no checkpoints: its log-structured file is both.
 */
final class H2Target implements PeerTarget {
    static final String MAP = "load";

    private final MVStore store;
    private final MVMap<Long, byte[]> map;
    private final boolean fsync;
    private final int cacheMiB;
    private final AtomicLong writeBytes;

    H2Target(CompareSettings s, Path dir) {
        cacheMiB = (int) (s.regionBytes() >> 20);
        fsync = s.sync() == WalSyncMode.FSYNC;
        store = new MVStore.Builder()
                .fileName(dir.resolve("store.mv").toAbsolutePath().toString())
                .autoCommitDisabled()
                .cacheSize(cacheMiB)
                .open();
        map = store.openMap(MAP);
        writeBytes = writeBytesCounter(store.getFileStore());
    }

    /** FileStore counts the bytes it writes but has no public getter for them. */
    private static AtomicLong writeBytesCounter(FileStore<?> fs) {
        try {
            Field f = FileStore.class.getDeclaredField("writeBytes");
            f.setAccessible(true);
            return (AtomicLong) f.get(fs);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    @Override
    public void put(long id, byte[] value) {
        map.put(id, value);
        commit();
    }

    @Override
    public byte[] get(long id) {
        return map.get(id);
    }

    @Override
    public void putBatch(long[] ids, byte[][] values, int n) {
        for (int i = 0; i < n; i++) map.put(ids[i], values[i]);
        commit();
    }

    private void commit() {
        store.commit();
        if (fsync) store.sync();
    }

    @Override
    public Gauges gauges() {
        return new Gauges(writeBytes == null ? -1 : writeBytes.get(), -1, -1, -1);
    }

    @Override
    public Checkpoint lastCheckpoint() {
        return null;
    }

    @Override
    public String describe() {
        return String.format("H2 MVStore %s: one file, autoCommit off, commit() after every put or batch%s, page cache %d MiB, "
                        + "default page split size; key Long, value byte[]; no WAL or checkpoints: 'WAL bytes' are the bytes its "
                        + "FileStore wrote (the log-structured store file itself)",
                org.h2.engine.Constants.VERSION, fsync ? " followed by sync() (fsync)" : " (written to the OS, no fsync)", cacheMiB);
    }

    @Override
    public void close() {
        store.close();
    }
}
