package dev.varve.engine;

import dev.varve.core.tree.BPlusTree;

import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One partition's B+tree and its lock: one writer at a time, readers share; readers and writers of other
 * partitions never wait for it.
 */
final class PartitionHandle {
    final int fileId;
    final int index;
    /** The table's name, for messages. */
    final String table;
    final BPlusTree tree;
    final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

    PartitionHandle(int fileId, int index, String table, BPlusTree tree) {
        this.fileId = fileId;
        this.index = index;
        this.table = table;
        this.tree = tree;
    }
}
