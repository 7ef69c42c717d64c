package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
)

// resolver answers a DNS name with IPv4 addresses; ok is false when the name does not exist.
type resolver func(name string) (ips []net.IP, ok bool)

// dnsServer serves cluster DNS on UDP and TCP: there is no CoreDNS in this stack.
type dnsServer struct {
	udp net.PacketConn
	tcp net.Listener
	wg  sync.WaitGroup
}

func startDNS(ctx context.Context, addr string, resolve resolver) (*dnsServer, error) {
	var lc net.ListenConfig
	udp, err := lc.ListenPacket(ctx, "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("dns udp: %w", err)
	}
	tcp, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		_ = udp.Close()
		return nil, fmt.Errorf("dns tcp: %w", err)
	}
	s := &dnsServer{udp: udp, tcp: tcp}
	s.wg.Add(2)
	go s.serveUDP(resolve)
	go s.serveTCP(resolve)
	return s, nil
}

func (s *dnsServer) close() {
	_ = s.udp.Close()
	_ = s.tcp.Close()
	s.wg.Wait()
}

func (s *dnsServer) serveUDP(resolve resolver) {
	defer s.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Printf("dns udp: %v", err)
			}
			return
		}
		if resp, ok := answer(buf[:n], resolve); ok {
			_, _ = s.udp.WriteTo(resp, from)
		}
	}
}

func (s *dnsServer) serveTCP(resolve resolver) {
	defer s.wg.Done()
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				msg := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				resp, ok := answer(msg, resolve)
				if !ok {
					return
				}
				out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
				if _, err := c.Write(append(out, resp...)); err != nil {
					return
				}
			}
		}()
	}
}

// answer builds the response to one query: A records for a known name, an empty answer for
// other types of a known name, NXDOMAIN for anything else.
func answer(req []byte, resolve resolver) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	ips, ok := resolve(q.Name.String())
	if !ok {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, false
	}
	if err := b.Question(q); err != nil {
		return nil, false
	}
	if err := b.StartAnswers(); err != nil {
		return nil, false
	}
	if ok && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		for _, ip := range ips {
			var a [4]byte
			copy(a[:], ip.To4())
			rrh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
			if err := b.AResource(rrh, dnsmessage.AResource{A: a}); err != nil {
				return nil, false
			}
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

// resolve maps <svc>.<ns>.svc.<cluster domain> to the IPs of the ready pods backing that
// Service: the pod named like it (sandbox pods are) or the pods its selector picks.
func (a *agent) resolve(name string) ([]net.IP, bool) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	rest, found := strings.CutSuffix(name, ".svc."+a.cfg.clusterDomain)
	if !found {
		return nil, false
	}
	svcName, ns, found := strings.Cut(rest, ".")
	if !found || strings.Contains(ns, ".") {
		return nil, false
	}
	svc, err := a.svcs.Services(ns).Get(svcName)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.Printf("dns %s: %v", name, err)
		}
		return nil, false
	}
	pods, err := a.pods.Pods(ns).List(everything())
	if err != nil {
		return nil, false
	}
	var ips []net.IP
	for _, p := range pods {
		backs := p.Name == svc.Name ||
			(len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels)))
		if backs && podReady(p) {
			if ip := net.ParseIP(p.Status.PodIP).To4(); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	return ips, len(ips) > 0
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
