package dev.varve.engine;


import java.lang.management.ManagementFactory;
import java.util.Hashtable;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.TimeUnit;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

/** A store's {@link VarveStoreMXBean}: registered by {@link #register}, removed by {@link #unregister}. */
final class StoreMXBeanImpl implements VarveStoreMXBean {
    /** How long a computed {@link #getArchiveDeadBytes} is served. */
    static final long DEAD_BYTES_REFRESH_SECONDS = 10;

    private final Engine engine;
    private final VarveMetrics m;
    private final ObjectName objectName;
    /** Cleared by the first unregister: a later close of this (stale) handle must not remove a newer store's bean of the same name. */
    private final AtomicBoolean registered = new AtomicBoolean(true);
    private long deadBytes;
    private long deadBytesAt;
    private boolean deadBytesKnown;

    private StoreMXBeanImpl(Engine engine, VarveMetrics metrics, ObjectName objectName) {
        this.engine = engine;
        this.m = metrics;
        this.objectName = objectName;
    }

    /** Numbers the read-only opens, which may share a name (several may read one store). */
    private static final AtomicLong READ_ONLY_OPENS = new AtomicLong();

    /** {@code dev.varve:type=Store,name="<name>"}, and {@code ,readOnly=<n>} for the n-th read-only open of this JVM. */
    static ObjectName objectName(String name, boolean readOnly) {
        Hashtable<String, String> keys = new Hashtable<>(Map.of("type", "Store", "name", ObjectName.quote(name)));
        if (readOnly) keys.put("readOnly", String.valueOf(READ_ONLY_OPENS.incrementAndGet()));
        try {
            return new ObjectName("dev.varve", keys);
        } catch (MalformedObjectNameException e) {
            throw new IllegalArgumentException("store name '" + name + "' cannot name an MBean: " + e.getMessage(), e);
        }
    }

    /**
     * Refuses a writable open under a name another open store of this JVM has, before the open creates or reads
     * anything ({@link #register} finds a clash too, but only once the store is open).
     */
    static void checkNameFree(String name) {
        if (ManagementFactory.getPlatformMBeanServer().isRegistered(objectName(name, false))) throw nameTaken(name, null);
    }

    private static IllegalStateException nameTaken(String name, Exception cause) {
        return new IllegalStateException("another open store in this JVM is named '" + name + "'; give each a distinct name", cause);
    }

    /** Registers the store's MXBean with the platform MBean server. */
    static StoreMXBeanImpl register(Engine engine, VarveMetrics metrics) {
        StoreMXBeanImpl bean = new StoreMXBeanImpl(engine, metrics, objectName(engine.config.name(), engine.readOnly));
        try {
            ManagementFactory.getPlatformMBeanServer().registerMBean(bean, bean.objectName);
        } catch (InstanceAlreadyExistsException e) {
            throw nameTaken(engine.config.name(), e);
        } catch (JMException e) {
            throw new IllegalStateException("cannot register the store's MBean " + bean.objectName + ": " + e.getMessage(), e);
        }
        return bean;
    }

    /** Removes the MXBean; idempotent, and only ever this store's. */
    void unregister() {
        if (!registered.getAndSet(false)) return;
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            if (server.isRegistered(objectName)) server.unregisterMBean(objectName);
        } catch (JMException e) {
            throw new IllegalStateException("cannot unregister " + objectName + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String getName() {
        return engine.config.name();
    }

    @Override
    public String getPath() {
        return engine.config.path().toAbsolutePath().toString();
    }

    @Override
    public boolean isReadOnly() {
        return engine.readOnly;
    }

    @Override
    public long getWalBytesWritten() {
        return m.walBytesWritten();
    }

    @Override
    public long getRecoveryFileBytesWritten() {
        return m.recoveryFileBytesWritten();
    }

    @Override
    public long getCheckpointsCompleted() {
        return m.checkpointsCompleted();
    }

    @Override
    public long getCheckpointPagesWritten() {
        return m.checkpointPagesWritten();
    }

    @Override
    public long getThrottledNanos() {
        return m.throttledNanos();
    }

    @Override
    public long getArchiveBytes() {
        return m.archiveBytes();
    }

    @Override
    public long getArchiveBytesReclaimed() {
        return m.archiveBytesReclaimed();
    }

    @Override
    public long[] getArchiveBytesPerLevel() {
        return m.archiveBytesPerLevel();
    }

    @Override
    public synchronized long getArchiveDeadBytes() {
        long now = System.nanoTime();
        if (!deadBytesKnown || now - deadBytesAt > TimeUnit.SECONDS.toNanos(DEAD_BYTES_REFRESH_SECONDS)) {
            deadBytes = m.archiveDeadBytes();
            deadBytesAt = now;
            deadBytesKnown = true;
        }
        return deadBytes;
    }

    @Override
    public long getArchiveBytesCopiedByRanking() {
        return m.archiveBytesCopiedByRanking();
    }

    @Override
    public double getDiffCompactness() {
        return m.diffCompactness();
    }

    @Override
    public long getWrites() {
        return m.writes();
    }

    @Override
    public long getReads() {
        return m.reads();
    }

    @Override
    public long getPagesRead() {
        return m.pagesRead();
    }

    @Override
    public long getPagesEvicted() {
        return m.pagesEvicted();
    }

    @Override
    public long getDirtyPages() {
        return m.dirtyPages();
    }

    @Override
    public long getCopyOnWritePages() {
        return m.copyOnWritePages();
    }

    @Override
    public long getCheckpointBufferUsedPages() {
        return m.checkpointBufferUsedPages();
    }

    @Override
    public long getCheckpointBufferPages() {
        return m.checkpointBufferPages();
    }

    @Override
    public long getDataRegionAllocatedBytes() {
        return m.dataRegionAllocatedBytes();
    }

    @Override
    public String getFailure() {
        return m.failure();
    }

    @Override
    public int getLiveSnapshots() {
        return engine.archive.snapshots().size();
    }

    private CheckpointStats last() {
        return m.lastCheckpoint();
    }

    @Override
    public long getLastCheckpointId() {
        return last().id();
    }

    @Override
    public String getLastCheckpointReason() {
        return last().reason();
    }

    @Override
    public int getLastCheckpointPages() {
        return last().pages();
    }

    @Override
    public String getLastCheckpointRecoveryData() {
        return last().recoveryData();
    }

    @Override
    public long getLastCheckpointRecoveryDataBytes() {
        return last().recoveryDataBytes();
    }

    @Override
    public long getLastCheckpointRecoveryDataNanos() {
        return last().recoveryDataNanos();
    }

    @Override
    public long getLastCheckpointPageWriteNanos() {
        return last().pageWriteNanos();
    }

    @Override
    public long getLastCheckpointFsyncNanos() {
        return last().fsyncNanos();
    }

    @Override
    public long getLastCheckpointLockHoldNanos() {
        return last().lockHoldNanos();
    }

    @Override
    public long getLastCheckpointTotalNanos() {
        return last().totalNanos();
    }

    @Override
    public long getLastCheckpointCopyOnWritePages() {
        return last().copyOnWritePages();
    }

    @Override
    public long getLastCheckpointThrottledNanos() {
        return last().throttledNanos();
    }

    @Override
    public long getLastCheckpointWalBytes() {
        return last().walBytes();
    }
}
