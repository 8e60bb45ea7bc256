package dev.varve.engine;

import dev.varve.core.page.PageId;
import dev.varve.core.spi.RecordTypes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The engine's side of {@link Varve#follow}: the subscribed listeners (copy-on-write, read without a lock by every
 * write) and the decoding of logical records into {@link ChangeListener} calls. Costs one volatile read per write
 * while nobody follows.
 */
final class ChangePublisher {
    private static final Logger LOG = LoggerFactory.getLogger(ChangePublisher.class);
    private static final ChangeListener[] NONE = new ChangeListener[0];

    private final Map<Integer, String> tableNames = new ConcurrentHashMap<>();
    private volatile ChangeListener[] listeners = NONE;

    boolean active() {
        return listeners.length > 0;
    }

    void tableRegistered(int tableId, String name) {
        tableNames.put(tableId, name);
    }

    synchronized void add(ChangeListener l) {
        ChangeListener[] now = Arrays.copyOf(listeners, listeners.length + 1);
        now[now.length - 1] = l;
        listeners = now;
    }

    synchronized void remove(ChangeListener l) {
        List<ChangeListener> now = new ArrayList<>(Arrays.asList(listeners));
        now.remove(l);
        listeners = now.toArray(NONE);
    }

    /** The handle of subscription {@code l}, which started after snapshot {@code id}. */
    ChangeFeed feed(long id, ChangeListener l) {
        return new ChangeFeed() {
            @Override
            public long snapshot() {
                return id;
            }

            @Override
            public void close() {
                remove(l);
            }
        };
    }

    /** Delivers a logged record of the write path (payload positioned at its start). */
    void logged(int type, ByteBuffer payload, long lsn) {
        switch (type) {
            case RecordTypes.DATA_BATCH: {
                List<ChangeListener.Change> changes = new ArrayList<>();
                for (LogicalRecords.Op op : LogicalRecords.decodeBatch(payload))
                    changes.add(new ChangeListener.Change(tableNames.get(PageId.tableOf(op.fileId())), op.key(), op.value(), PageId.partitionOf(op.fileId())));
                List<ChangeListener.Change> immutable = List.copyOf(changes);
                deliver(l -> l.onWrite(lsn, immutable));
                break;
            }
            case RecordTypes.CREATE_TABLE: {
                LogicalRecords.CreateTable c = LogicalRecords.decodeCreateTable(payload);
                deliver(l -> l.onTableCreated(lsn, c.name(), c.options()));
                break;
            }
            case RecordTypes.DESTROY_PARTITION: {
                int fileId = LogicalRecords.decodeDestroy(payload);
                deliver(l -> l.onPartitionDestroyed(lsn, tableNames.get(PageId.tableOf(fileId)), PageId.partitionOf(fileId)));
                break;
            }
            default:
                throw new IllegalArgumentException("record type " + type + " is not published by the write path");
        }
    }

    void snapshot(long lsn, long id, int rank) {
        deliver(l -> l.onSnapshot(lsn, id, rank));
    }

    void rank(long lsn, long id, int rank) {
        deliver(l -> l.onRank(lsn, id, rank));
    }

    private interface Call {
        void on(ChangeListener l);
    }

    private void deliver(Call call) {
        for (ChangeListener l : listeners) {
            try {
                call.on(l);
            } catch (Throwable e) {
                // any throwable, Errors too (a failed assertion, an OutOfMemoryError while the listener buffers): the
                // write is logged and applied, so letting one escape would fail a write that stands, skip its commit
                // and, in a writeAndSnapshot, its snapshot's declaration
                LOG.warn("change listener {} failed and is unsubscribed", l, e);
                remove(l);
            }
        }
    }
}
