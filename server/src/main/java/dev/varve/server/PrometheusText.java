package dev.varve.server;

import dev.varve.engine.CheckpointStats;
import dev.varve.engine.VarveMetrics;

/**
 * Renders the store's metrics in the Prometheus text exposition format (version 0.0.4): every {@link VarveMetrics}
 * figure, the last checkpoint's IEP-113 breakdown, the live snapshot count, and the server's shipping figures. Units
 * are last in the names ({@code _bytes}, {@code _seconds}, {@code _pages}); counters end in {@code _total}.
 */
final class PrometheusText {
    static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final StringBuilder out = new StringBuilder(4096);

    private PrometheusText() {
    }

    static String render(VarveMetrics m, long archiveDeadBytes, int liveSnapshots, ShipCounters ship) {
        PrometheusText p = new PrometheusText();
        p.counter("varve_wal_bytes_written_total", "WAL bytes appended since open.", m.walBytesWritten());
        p.counter("varve_recovery_file_bytes_written_total", "Checkpoint recovery-file bytes written since open.", m.recoveryFileBytesWritten());
        p.counter("varve_checkpoints_completed_total", "Checkpoints completed since open.", m.checkpointsCompleted());
        p.counter("varve_checkpoint_pages_written_total", "Pages written by checkpoints since open.", m.checkpointPagesWritten());
        p.counter("varve_throttled_seconds_total", "Time writers spent throttled since open, summed over writers.", seconds(m.throttledNanos()));
        p.gauge("varve_archive_bytes", "Bytes held by the snapshot archive.", m.archiveBytes());
        p.counter("varve_archive_reclaimed_bytes_total", "Snapshot-archive bytes given back by reclamation since open.", m.archiveBytesReclaimed());
        p.header("varve_archive_level_bytes", "gauge", "Snapshot-archive bytes per rank level's region.");
        long[] levels = m.archiveBytesPerLevel();
        for (int i = 0; i < levels.length; i++) p.sample("varve_archive_level_bytes{level=\"" + (i + 1) + "\"}", levels[i]);
        p.gauge("varve_archive_dead_bytes", "Archived pre-states no one needs that lie behind needed ones (measured again every "
                + "ServerOptions.deadBytesInterval, 60 s by default; NaN when the measurement failed).",
                archiveDeadBytes == MetricsSampler.UNKNOWN ? Double.NaN : archiveDeadBytes);
        p.counter("varve_archive_ranking_copied_bytes_total", "Snapshot-archive bytes written by lazy ranking since open.", m.archiveBytesCopiedByRanking());
        p.gauge("varve_archive_diff_compactness_ratio", "Diff bytes over full-page bytes of the pages lazy ranking copied (NaN before the first).", m.diffCompactness());
        p.counter("varve_writes_total", "Puts and removes applied since open.", m.writes());
        p.counter("varve_reads_total", "Point reads of the live state served since open.", m.reads());
        p.counter("varve_pages_read_total", "Pages read from the page files since open.", m.pagesRead());
        p.counter("varve_pages_evicted_total", "Clean pages evicted from the data region since open.", m.pagesEvicted());
        p.gauge("varve_dirty_pages", "Pages dirty or held for the running checkpoint.", m.dirtyPages());
        p.counter("varve_copy_on_write_pages_total", "Pages writers copied into the checkpoint buffer since open.", m.copyOnWritePages());
        p.gauge("varve_checkpoint_buffer_used_pages", "Checkpoint-buffer pages in use.", m.checkpointBufferUsedPages());
        p.gauge("varve_checkpoint_buffer_capacity_pages", "Checkpoint-buffer capacity.", m.checkpointBufferPages());
        p.gauge("varve_data_region_allocated_bytes", "Data-region memory allocated, which grows as the store uses pages up to dataRegionSize.",
                m.dataRegionAllocatedBytes());
        p.gauge("varve_snapshots_live", "Live snapshots.", liveSnapshots);
        p.gauge("varve_failed", "1 once a failure (a full disk, an I/O error) stopped the store's writes until it is reopened, else 0.",
                m.failure() == null ? 0 : 1);
        p.lastCheckpoint(m.lastCheckpoint());
        p.shipping(ship);
        return p.out.toString();
    }

    private void lastCheckpoint(CheckpointStats c) {
        // no id label: one that changes with every checkpoint would start a new series each time (the id is a gauge below)
        header("varve_last_checkpoint_info", "gauge", "The last checkpoint: what triggered it and how its recovery data was kept (always 1).");
        sample("varve_last_checkpoint_info{reason=\"" + escape(c.reason()) + "\",recovery_data=\"" + escape(c.recoveryData()) + "\"}", 1);
        gauge("varve_last_checkpoint_id", "Id of the last checkpoint since the store was opened (0 before the first).", c.id());
        gauge("varve_last_checkpoint_pages", "Pages the last checkpoint wrote.", c.pages());
        gauge("varve_last_checkpoint_recovery_data_bytes", "Recovery-file bytes the last checkpoint wrote.", c.recoveryDataBytes());
        gauge("varve_last_checkpoint_recovery_data_seconds", "Time the last checkpoint spent writing and fsyncing recovery data.", seconds(c.recoveryDataNanos()));
        gauge("varve_last_checkpoint_page_write_seconds", "Time the last checkpoint spent writing pages.", seconds(c.pageWriteNanos()));
        gauge("varve_last_checkpoint_fsync_seconds", "Time the last checkpoint spent fsyncing page files.", seconds(c.fsyncNanos()));
        gauge("varve_last_checkpoint_lock_hold_seconds", "Time the last checkpoint waited for and held the checkpoint write lock (new writes wait all of it).", seconds(c.lockHoldNanos()));
        gauge("varve_last_checkpoint_total_seconds", "Wall time of the last checkpoint.", seconds(c.totalNanos()));
        gauge("varve_last_checkpoint_copy_on_write_pages", "Pages writers copied during the last checkpoint.", c.copyOnWritePages());
        gauge("varve_last_checkpoint_throttled_seconds", "Time writers were throttled during the last checkpoint.", seconds(c.throttledNanos()));
        gauge("varve_last_checkpoint_wal_bytes", "WAL bytes written between the previous checkpoint's mark and the last one's.", c.walBytes());
    }

    /** What this server's shipping connections did since it started (not since the store opened). */
    private void shipping(ShipCounters s) {
        gauge("varve_ship_images_in_progress", "Snapshot images being sent now (backups, and follow streams before their changes).",
                s.imagesInProgress());
        counter("varve_ship_images_sent_total", "Snapshot images sent whole (their END frame handed to the connection) since the server started.",
                s.imagesSent());
        counter("varve_ship_images_failed_total", "Snapshot image transfers that ended before their END frame (receiver gone, connection cut,"
                + " a store error) since the server started.", s.imagesFailed());
        counter("varve_ship_page_bytes_total", "Bytes of pages sent in snapshot images since the server started.", s.pageBytes());
        gauge("varve_ship_followers", "Follow streams sending their store's changes now.", s.followers());
        counter("varve_ship_change_bytes_total", "Bytes of follow frames (changes, snapshots, ranks, heartbeats) sent since the server started.",
                s.changeBytes());
    }

    static double seconds(long nanos) {
        return nanos / 1e9;
    }

    private void counter(String name, String help, double value) {
        header(name, "counter", help);
        sample(name, value);
    }

    private void gauge(String name, String help, double value) {
        header(name, "gauge", help);
        sample(name, value);
    }

    private void header(String name, String type, String help) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    }

    private void sample(String nameAndLabels, double value) {
        out.append(nameAndLabels).append(' ').append(format(value)).append('\n');
    }

    private static String format(double v) {
        if (Double.isNaN(v)) return "NaN";
        if (Double.isInfinite(v)) return v > 0 ? "+Inf" : "-Inf";
        if (v == Math.rint(v) && Math.abs(v) < 1e15) return Long.toString((long) v);
        return Double.toString(v);
    }

    /** A label value: backslash, double quote and line feed escaped. */
    private static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }
}
