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

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One port, two protocols: looks at a connection's first four bytes and sets up the rest of its pipeline, the
 * snapshot-shipping protocol for {@link ShipProtocol#MAGIC}, HTTP (admin, metrics, dashboard) for anything else.
 * Until then the connection has the idle timeout, so a client that sends nothing is closed; an HTTP connection keeps
 * it, while a shipping one gets a fixed deadline for its HELLO instead ({@link ShipSender}): bytes trickled one at a
 * time would reset an idle timeout forever.
 */
final class ProtocolSniffer extends ByteToMessageDecoder {
    private static final String IDLE = "idle";

    private final VarveServer.Shared shared;

    ProtocolSniffer(VarveServer.Shared shared) {
        this.shared = shared;
    }

    static void install(ChannelPipeline p, VarveServer.Shared shared) {
        p.addLast(IDLE, new IdleStateHandler(0, 0, shared.options.idleTimeout().toNanos(), TimeUnit.NANOSECONDS));
        p.addLast(new ProtocolSniffer(shared));
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (in.readableBytes() < ShipProtocol.MAGIC.length) return;
        ChannelPipeline p = ctx.pipeline();
        if (ByteBufUtil.equals(in, in.readerIndex(), Unpooled.wrappedBuffer(ShipProtocol.MAGIC), 0, ShipProtocol.MAGIC.length)) {
            in.skipBytes(ShipProtocol.MAGIC.length);
            p.remove(IDLE);
            p.addLast(new FrameDecoder(ShipProtocol.MAX_REQUEST_FRAME_BYTES));
            p.addLast(new ShipSender(shared.store, shared.shipThreads, shared.options));
        } else {
            ServerOptions o = shared.options;
            RequestDeadline deadline = new RequestDeadline(o.requestTimeout().toNanos());
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
