package dev.varve.core.memory;

import dev.varve.core.page.Page;
import org.jctools.queues.MpmcArrayQueue;

import java.nio.ByteBuffer;

/**
 * Off-heap copy-on-write area of the checkpoint: when a writer changes a page that the running checkpoint has not
 * written yet, the page's image at the mark is copied here first, so the checkpoint writes exactly the state at
 * its mark. Bounded; slots are handed out and returned through a JCTools MPMC queue (writers take, checkpoint
 * threads give back).
 */
final class CheckpointBuffer {
    private final ByteBuffer memory;
    private final int pageSize;
    private final int capacity;
    private final MpmcArrayQueue<Integer> freeSlots;
    /** Slot numbers boxed once, so handing slots around allocates nothing. */
    private final Integer[] boxes;

    CheckpointBuffer(long bytes, int pageSize) {
        this.pageSize = pageSize;
        this.capacity = (int) Math.min(Integer.MAX_VALUE / pageSize, bytes / pageSize);
        this.memory = ByteBuffer.allocateDirect(capacity * pageSize);
        this.freeSlots = new MpmcArrayQueue<>(Math.max(2, capacity));
        this.boxes = new Integer[capacity];
        for (int i = 0; i < capacity; i++) {
            boxes[i] = i;
            freeSlots.offer(boxes[i]);
        }
    }

    /** Copies {@code page} into a free slot; returns the slot or -1 when the buffer is full. */
    int copyOf(Page page) {
        Integer slot = freeSlots.poll();
        if (slot == null) return -1;
        page.copyTo(memory, slot * pageSize);
        return slot;
    }

    /** Copies slot contents to {@code dst}. */
    void copyOut(int slot, ByteBuffer dst, int dstOffset) {
        dst.put(dstOffset, memory, slot * pageSize, pageSize);
    }

    void free(int slot) {
        freeSlots.offer(boxes[slot]);
    }

    int capacity() {
        return capacity;
    }

    int used() {
        return capacity - freeSlots.size();
    }
}
