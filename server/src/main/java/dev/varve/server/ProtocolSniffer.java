package dev.varve.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One port, two protocols: looks at a connection's first bytes and sets up the rest of its pipeline, the
 * snapshot-shipping protocol for {@link ShipProtocol#MAGIC}, HTTP (admin, metrics, dashboard) as soon as a byte
 * differs from it (the first, for every HTTP method). Deadlines count from the accept, never from a later byte: the
 * protocol must be told within the request timeout, and an HTTP connection's first request must be whole within that
 * same time of the accept ({@link RequestDeadline}). Bytes trickled one at a time reset an idle timeout forever, so a
 * slow client could otherwise hold a connection slot for minutes before its deadline even started (256 of them locked
 * everyone out). An HTTP connection keeps the idle timeout between requests; a shipping one gets a fixed deadline for
 * its HELLO instead ({@link ShipSender}).
 */
final class ProtocolSniffer extends ByteToMessageDecoder {
    private static final String IDLE = "idle";

    private final VarveServer.Shared shared;
    /** When the connection was accepted: the sniffer is made then, by the channel's initializer. */
    private final long acceptedNanos = System.nanoTime();
    private ScheduledFuture<?> deadline;

    ProtocolSniffer(VarveServer.Shared shared) {
        this.shared = shared;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        // nothing but a prefix of the shipping magic (or nothing at all) within the request timeout: not a client
        deadline = ctx.executor().schedule(() -> ctx.close(), shared.options.requestTimeout().toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        deadline.cancel(false);
    }

    static void install(ChannelPipeline p, VarveServer.Shared shared) {
        p.addLast(IDLE, new IdleStateHandler(0, 0, shared.options.idleTimeout().toNanos(), TimeUnit.NANOSECONDS));
        p.addLast(new ProtocolSniffer(shared));
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        int seen = Math.min(in.readableBytes(), ShipProtocol.MAGIC.length);
        boolean shipping = ByteBufUtil.equals(in, in.readerIndex(), Unpooled.wrappedBuffer(ShipProtocol.MAGIC), 0, seen);
        if (shipping && seen < ShipProtocol.MAGIC.length) return; // a prefix of the magic so far: wait for the rest
        ChannelPipeline p = ctx.pipeline();
        if (shipping) {
            in.skipBytes(ShipProtocol.MAGIC.length);
            p.remove(IDLE);
            p.addLast(new FrameDecoder(ShipProtocol.MAX_REQUEST_FRAME_BYTES));
            p.addLast(new ShipSender(shared.store, shared.shipThreads, shared.shipCounters, shared.options));
        } else {
            ServerOptions o = shared.options;
            RequestDeadline deadline = new RequestDeadline(o.requestTimeout().toNanos(), acceptedNanos);
            p.addLast(deadline.byteWatch());
            p.addLast(new HttpServerCodec(o.maxInitialLineBytes(), o.maxHeaderBytes(), 8192));
            p.addLast(deadline);
            p.addLast(new HttpObjectAggregator(o.maxRequestBodyBytes(), true) { // true: close after refusing an Expect
                @Override
                protected Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
                    Object answer = super.newContinueResponse(start, maxContentLength, pipeline);
                    if (!(answer instanceof HttpResponse r) || r.status().codeClass() != HttpStatusClass.CLIENT_ERROR) return answer;
                    // netty's refusals of an Expect header are bare: the same status with the message every 4xx has
                    ReferenceCountUtil.release(answer);
                    return r.status().code() == 413
                            ? HttpAdminHandler.refusal(413, "request body over " + o.maxRequestBodyBytes() + " bytes")
                            : HttpAdminHandler.refusal(417, "the Expect header asks for what this server does not do (it knows 100-continue only)");
                }

                @Override
                protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
                    // netty's own answer is a bare 413 that keeps the connection: say why, and close
                    HttpAdminHandler.refuseAndClose(ctx, 413, "request body over " + o.maxRequestBodyBytes() + " bytes");
                }
            });
            p.addLast(new HttpAdminHandler(shared.routes, shared.hostCheck, shared.adminThreads));
        }
        p.remove(this); // hands what it has buffered to the handlers just added
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof IdleStateEvent) ctx.close();
        else super.userEventTriggered(ctx, evt);
    }
}
