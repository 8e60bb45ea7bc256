package dev.varve.core.memory;

/**
 * Extension point at every page change (the Retro idea: layers extend the standard protocols through callbacks).
 * The physical WAL logs page images and deltas here; the snapshot layer captures pre-states here. Both calls run
 * with the page's write latch held, inside the writer's operation.
 */
public interface PageWriteHook {
    /**
     * Before the caller changes {@code page}. {@code fresh}: the page was just zeroed (a new page, or one taken off
     * a free list) and its old contents are gone.
     */
    void beforeChange(Frame page, boolean fresh);

    /** After the change, before the latch is released. */
    void afterChange(Frame page);
}
