package dev.varve.core.memory;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;

/**
 * {@link PageMemory#underWriterExclusion()}: page memory for code that holds a lock excluding every writer of the pages
 * it reads, whose reads only pin (no latch), or not even that: an optimistic read ({@link #peekChild}) checks the
 * frame's version afterwards instead; writes latch as usual.
 */
final class UnlatchedReads implements PageAccess {
    private final PageMemory memory;

    UnlatchedReads(PageMemory memory) {
        this.memory = memory;
    }

    @Override
    public int pageSize() {
        return memory.pageSize;
    }

    @Override
    public Page acquireRead(long pageId) {
        return memory.acquire(pageId, false);
    }

    @Override
    public Page acquireReadChild(Page parent, int index, long childId) {
        return memory.childHints.acquire(memory, parent, index, childId);
    }

    @Override
    public Page acquireReadAgain(Page last, long pageId) {
        return memory.acquireAgain(last, pageId);
    }

    /** Writers are excluded, so only eviction can take a page from under a reader: the frame's version tells. */
    @Override
    public long peekChild(Page parent, int index, long childId) {
        return memory.closed ? -1 : ChildHints.peek((Frame) parent, index, childId);
    }

    @Override
    public long peekAgain(Page last, long pageId) {
        return memory.closed || !(last instanceof Frame) ? -1 : ((Frame) last).stampIfHolding(pageId);
    }

    @Override
    public Page stamped(long stamp) {
        return memory.frame((int) (stamp >>> 32));
    }

    @Override
    public boolean validate(long stamp) {
        return memory.frame((int) (stamp >>> 32)).validate(stamp);
    }

    @Override
    public Page stampedChild(Page parent, int index, long stamp) {
        Frame hinted = ChildHints.hinted((Frame) parent, index); // rewritten since the peek: the slot tells
        return hinted != null && hinted.slot == (int) (stamp >>> 32) ? hinted : stamped(stamp);
    }

    @Override
    public boolean validate(Page page, long stamp) {
        Frame f = (Frame) page;
        return f.slot == (int) (stamp >>> 32) && f.validate(stamp);
    }

    @Override
    public void releaseRead(Page page) {
        ((Frame) page).unpin();
    }

    @Override
    public Page acquireWrite(long pageId) {
        return memory.acquireWrite(pageId);
    }

    @Override
    public Page acquireWriteChild(Page parent, int index, long childId) {
        return memory.acquireWriteChild(parent, index, childId);
    }

    @Override
    public Page acquireNew(long pageId) {
        return memory.acquireNew(pageId);
    }

    @Override
    public void releaseWrite(Page page) {
        memory.releaseWrite(page);
    }
}
