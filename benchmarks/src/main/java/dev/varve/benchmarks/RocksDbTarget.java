package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.FlushOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.Statistics;
import org.rocksdb.StatsLevel;
import org.rocksdb.TickerType;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

import java.nio.file.Path;

/**
 * RocksDB through rocksdbjni: one database, default column family, the same 8-byte big-endian keys as Varve. The WAL
 * is on for every write; LOG_ONLY writes it to the OS without sync (survives a process crash), FSYNC sets
 * {@code WriteOptions.sync} (RocksDB groups concurrent synced writers itself). The block cache gets the page memory
 * the other systems get; the memtable and compaction settings are RocksDB's defaults apart from two background jobs
 * (the machine's cores). RocksDB has no checkpoints; its memtable flushes and compactions show in the bytes on disk.
 */
final class RocksDbTarget implements PeerTarget {
    static final int BACKGROUND_JOBS = 2;

    private final RocksDB db;
    private final Options options;
    private final Statistics statistics;
    private final LRUCache cache;
    private final WriteOptions write;
    private final boolean sync;
    private final long cacheBytes;

    RocksDbTarget(CompareSettings s, Path dir) {
        RocksDB.loadLibrary();
        sync = s.sync() == WalSyncMode.FSYNC;
        cacheBytes = s.regionBytes();
        statistics = new Statistics();
        statistics.setStatsLevel(StatsLevel.EXCEPT_DETAILED_TIMERS);
        cache = new LRUCache(cacheBytes);
        options = new Options()
                .setCreateIfMissing(true)
                .setStatistics(statistics)
                .setMaxBackgroundJobs(BACKGROUND_JOBS)
                .setTableFormatConfig(new BlockBasedTableConfig().setBlockCache(cache));
        write = new WriteOptions().setSync(sync).setDisableWAL(false);
        try {
            db = RocksDB.open(options, dir.toAbsolutePath().toString());
        } catch (RocksDBException e) {
            closeOptions();
            throw new IllegalStateException("RocksDB did not open " + dir + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void put(long id, byte[] value) {
        try {
            db.put(write, Keys.of(id), value);
        } catch (RocksDBException e) {
            throw new IllegalStateException("RocksDB put failed: " + e.getMessage(), e);
        }
    }

    @Override
    public byte[] get(long id) {
        try {
            return db.get(Keys.of(id));
        } catch (RocksDBException e) {
            throw new IllegalStateException("RocksDB get failed: " + e.getMessage(), e);
        }
    }

    /** Flushes the memtable and waits: the gets read SST files through the block cache, as a store that has settled does. */
    @Override
    public void settle() {
        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
            db.flush(flush);
        } catch (RocksDBException e) {
            throw new IllegalStateException("RocksDB flush failed: " + e.getMessage(), e);
        }
    }

    @Override
    public void putBatch(long[] ids, byte[][] values, int n) {
        try (WriteBatch b = new WriteBatch()) {
            for (int i = 0; i < n; i++) b.put(Keys.of(ids[i]), values[i]);
            db.write(write, b);
        } catch (RocksDBException e) {
            throw new IllegalStateException("RocksDB batch write failed: " + e.getMessage(), e);
        }
    }

    @Override
    public Gauges gauges() {
        return new Gauges(statistics.getTickerCount(TickerType.WAL_FILE_BYTES), -1, -1, -1);
    }

    @Override
    public Checkpoint lastCheckpoint() {
        return null;
    }

    @Override
    public String describe() {
        return String.format("RocksDB %s (rocksdbjni): one database, default column family, WAL on, WriteOptions.sync=%s%s, "
                        + "block cache %d MiB (LRU), maxBackgroundJobs=%d, write buffer %d MiB x %d, compression %s, compaction %s; "
                        + "key = 8-byte big-endian id; a batch is one atomic WriteBatch",
                RocksDB.rocksdbVersion(), sync, sync ? " (fsync per write, grouped by RocksDB)" : " (WAL written to the OS)",
                cacheBytes >> 20, BACKGROUND_JOBS, options.writeBufferSize() >> 20, options.maxWriteBufferNumber(),
                options.compressionType(), options.compactionStyle());
    }

    @Override
    public void close() {
        db.close();
        closeOptions();
    }

    private void closeOptions() {
        write.close();
        options.close();
        cache.close();
        statistics.close();
    }
}
