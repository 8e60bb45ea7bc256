package dev.varve.snapshot;

import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageWriteHook;
import dev.varve.core.page.PageHeader;

/**
 * Retro's split copy-on-write: at the first change of a page after the latest snapshot declaration — its
 * SavedAfter, cached in the page header (Retro's SAC), is older than the latest snapshot — the page's pre-state is
 * copied to the archive before the change, and SavedAfter moves to the latest snapshot. A fresh page (new, or
 * reused off a free list, whose old contents were captured when it was freed) has no pre-state any snapshot can
 * reach; it only gets its SavedAfter.
 */
final class Capture implements PageWriteHook {
    private final CapturePath path;
    private volatile boolean enabled;

    Capture(CapturePath path) {
        this.path = path;
    }

    /** Off during binary restore (restoring images is not a change); on for replay and normal running. */
    void enabled(boolean on) {
        enabled = on;
    }

    @Override
    public void beforeChange(Frame page, boolean fresh) {
        if (!enabled) return;
        long latest = path.latestDeclared();
        if (latest == 0) return;
        long savedAfter = page.getLong(PageHeader.SAVED_AFTER_OFFSET);
        if (savedAfter >= latest) return;
        if (!fresh) path.capture(page, latest, savedAfter);
        else page.captureNote(null); // zeroed: no diff against what it held before
        page.putLong(PageHeader.SAVED_AFTER_OFFSET, latest);
    }

    @Override
    public void afterChange(Frame page) {
        // the pre-state was taken before the change; nothing to do after it
    }
}
