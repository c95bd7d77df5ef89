/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection domains and memory regions (ibv_alloc_pd(3), ibv_reg_mr(3)): the checks of
 * a range, pinning, on-demand regions and the ibv_* shape. The key table, its slots
 * and keys are the transport's (dpv_mr_register(), dpv_xport_mr.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs_priv.h"

static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct dpv_context *c = to_ctx(context);
	struct dpv_pd *pd = calloc(1, sizeof(*pd));

	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	pthread_mutex_lock(&context->mutex);
	pd->id = ++c->next_pd;
	pthread_mutex_unlock(&context->mutex);
	pd->ibpd.handle = pd->id;
	return &pd->ibpd;
}

/*
 * ibv_alloc_pd(3): EBUSY while an MR, QP, SRQ, CQ, AH or parent domain is on the PD (or
 * on the parent domain, ibv_alloc_parent_domain(3)). QPs, SRQs, CQs, AHs and parent
 * domains count themselves in users; the MRs are looked up in the device's key table
 * (a control-path scan, under the lock registration takes), so no count has to follow
 * ibv_rereg_mr(3)'s change of PD.
 */
int ibv_dealloc_pd(struct ibv_pd *pd)
{
	const struct dpv_mr_table *t = to_ctx(pd->context)->dev->mrs;
	const struct dpv_mr *mr;
	bool busy = __atomic_load_n(&to_pd(pd)->users, __ATOMIC_ACQUIRE) != 0;
	uint32_t slot = 0;

	pthread_mutex_lock(&mr_lock);
	while (!busy && (mr = dpv_mr_next(t, &slot)) != NULL)
		busy = container_of(mr, struct dpv_mr_v, mr)->ibmr.pd == pd;
	pthread_mutex_unlock(&mr_lock);
	if (busy)
		return EBUSY;
	if (to_pd(pd)->protection != NULL)
		return dpv_verbs_parent_dealloc(to_pd(pd));
	free(to_pd(pd));
	return 0;
}

/* ---- checks of a range (ibv_reg_mr(3), ibv_rereg_mr(3)) ---- */

/* The access rights that need a writable mapping: the device stores into the region. */
#define WRITE_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

static uintptr_t page_down(uintptr_t a)
{
	return a & ~((uintptr_t)getpagesize() - 1);
}

/* The end of the last page of a range; the caller has checked it does not wrap. */
static uintptr_t page_up(uintptr_t a)
{
	return page_down(a + (uintptr_t)getpagesize() - 1);
}

/*
 * Without /proc, presence is all that can be checked: mincore(2) fails with ENOMEM when
 * a page of the range is not mapped.
 */
static int range_present(uintptr_t lo, uintptr_t hi)
{
	unsigned char vec[256];
	const uintptr_t ps = (uintptr_t)getpagesize();

	while (lo < hi) {
		uintptr_t n = (hi - lo) / ps < sizeof(vec) ? hi - lo : sizeof(vec) * ps;

		if (mincore((void *)lo, n, vec) != 0)
			return EFAULT;
		lo += n;
	}
	return 0;
}

/*
 * 0 if every page of [lo, hi) (page-aligned) is mapped readable and, with @p write,
 * writable; EFAULT if not. The device reads and writes a region with the CPU, so the
 * mapping's protections are what decide whether a copy faults. /proc/self/maps lists
 * mappings in address order with their protections: the range must be covered by
 * consecutive mappings, each with the rights asked for. mincore(2) alone would tell
 * presence but not protections, and a probe (reading and writing back a byte of each
 * page) would race with the program's own stores. This runs at registration only.
 */
static int range_mapped(uintptr_t lo, uintptr_t hi, bool write)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long start, end;
	uintptr_t cur = lo;
	char perms[5];
	int ret = EFAULT;

	if (f == NULL)
		return range_present(lo, hi);
	while (fscanf(f, "%lx-%lx %4s %*[^\n]", &start, &end, perms) == 3) {
		if (end <= cur)
			continue;
		if (start > cur || perms[0] != 'r' || (write && perms[1] != 'w'))
			break;
		cur = end;
		if (cur >= hi) {
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/*
 * The errno ibv_reg_mr(3) and ibv_rereg_mr(3) give a range with @p access, 0 if it can
 * be registered: EINVAL if it wraps past the top of the address space, ENOMEM if it is
 * longer than DPV_MAX_MR_SIZE (a device limit, as a kernel provider reports a range it
 * cannot pin), EFAULT if a page of it is not mapped with the rights @p access needs (as
 * ib_umem_get() reports an address it cannot pin).
 */
static int range_check(const void *addr, size_t length, unsigned int access)
{
	uintptr_t a = (uintptr_t)addr;

	if (length == 0)
		return 0;
	if (length > UINTPTR_MAX - a || a + length > UINTPTR_MAX - (uintptr_t)getpagesize())
		return EINVAL;
	if (length > DPV_MAX_MR_SIZE)
		return ENOMEM;
	/* An on-demand region's pages need not be there yet: they are faulted in when the
	 * device touches them, and an access to one that is not mapped then ends as a bad
	 * key's does (memory.md). */
	if (access & IBV_ACCESS_ON_DEMAND)
		return 0;
	return range_mapped(page_down(a), page_up(a + length), (access & WRITE_ACCESS) != 0);
}

/* ibv_reg_mr(3): an implicit on-demand region covers the whole address space. */
static bool implicit_odp(const void *addr, size_t length, unsigned int access)
{
	return (access & IBV_ACCESS_ON_DEMAND) && addr == NULL && length == SIZE_MAX;
}

/* ---- pinning ---- */

/*
 * A registered region's pages are locked (mlock(2)) when RLIMIT_MEMLOCK allows, so the
 * device never waits for a page to come back from swap. mlock(2) does not nest: one
 * munlock(2) unlocks a page however many regions locked it. So every locked region is
 * on this list (process-wide, as locks are, under mr_lock), and unlocking one locks
 * again what other locked regions share with it.
 *
 * When the limit refuses, the region is registered unlocked: the device copies with the
 * CPU, so an unlocked page that was swapped out faults back in and the copy is correct,
 * only slower. Failing instead (ENOMEM, as ib_umem_get() does for hardware that DMAs into
 * pinned pages) would refuse most programs under the default limit of 8 MiB.
 */
struct mr_full {
	struct dpv_mr_v v;
	bool odp;                    /* IBV_ACCESS_ON_DEMAND: never locked */
	uintptr_t lock_lo, lock_hi;  /* the locked pages; lock_lo == lock_hi if none */
	struct mr_full *prev, *next; /* on the locked list while lock_lo < lock_hi */
};

static struct mr_full *locked_list;

static struct mr_full *to_full(struct dpv_mr_v *m)
{
	return container_of(m, struct mr_full, v);
}

static void pin(struct mr_full *f, const void *addr, size_t length)
{
	uintptr_t lo = page_down((uintptr_t)addr), hi = lo;

	if (length > 0)
		hi = page_up((uintptr_t)addr + length);
	f->lock_lo = f->lock_hi = 0;
	if (lo == hi || mlock((void *)lo, hi - lo) != 0)
		return;
	f->lock_lo = lo;
	f->lock_hi = hi;
	f->prev = NULL;
	f->next = locked_list;
	if (locked_list != NULL)
		locked_list->prev = f;
	locked_list = f;
}

static void unpin(struct mr_full *f)
{
	if (f->lock_lo == f->lock_hi)
		return;
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		locked_list = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	munlock((void *)f->lock_lo, f->lock_hi - f->lock_lo);
	for (struct mr_full *o = locked_list; o != NULL; o = o->next) {
		uintptr_t lo = o->lock_lo > f->lock_lo ? o->lock_lo : f->lock_lo;
		uintptr_t hi = o->lock_hi < f->lock_hi ? o->lock_hi : f->lock_hi;

		/* These pages were locked a moment ago, so the limit allows them again. */
		if (lo < hi)
			mlock((void *)lo, hi - lo);
	}
	f->lock_lo = f->lock_hi = 0;
}

/* ---- ibv_reg_mr(3), ibv_dereg_mr(3), ibv_rereg_mr(3) ---- */

/*
 * Register [addr, addr + length) for @p access. Besides ibv_reg_mr(3)'s EINVAL for bad
 * access flags or an iova other than @p addr: EOPNOTSUPP for access flags dpverbs does
 * not offer (dpv_verbs_access_check()), EINVAL for a range that wraps, ENOMEM for
 * one longer than DPV_MAX_MR_SIZE or when every key slot is taken, EFAULT for a range
 * not mapped with the rights @p access needs (doc/guides/memory.md). The pages are
 * locked when RLIMIT_MEMLOCK allows.
 */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct dpv_context *c = to_ctx(pd->context);
	struct dpv_mr_table *t = c->dev->mrs;
	struct mr_full *f;
	struct dpv_mr_v *m;
	int ret;

	ret = dpv_verbs_access_check(access);
	if (ret == 0 && implicit_odp(addr, length, access))
		; /* the whole address space, no page of which need be mapped */
	else if (ret == 0 && (iova != (uintptr_t)addr || (addr == NULL && length > 0)))
		ret = EINVAL;
	else if (ret == 0)
		ret = range_check(addr, length, access);
	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	m = &f->v;
	m->mr.addr = (uintptr_t)addr;
	m->mr.length = length;
	m->mr.access = dpv_verbs_access_kept(access);
	m->mr.pd = to_pd(pd)->id;
	f->odp = (access & IBV_ACCESS_ON_DEMAND) != 0;
	pthread_mutex_lock(&mr_lock);
	if (!f->odp)
		pin(f, addr, length);
	ret = dpv_mr_register(t, &m->mr);
	if (ret != 0) {
		unpin(f);
		pthread_mutex_unlock(&mr_lock);
		free(f);
		errno = ret;
		return NULL;
	}
	pthread_mutex_unlock(&mr_lock);
	m->ibmr.context = pd->context;
	m->ibmr.pd = pd;
	m->ibmr.addr = addr;
	m->ibmr.length = length;
	m->ibmr.handle = dpv_mr_key_slot(m->mr.lkey);
	m->ibmr.lkey = m->mr.lkey;
	m->ibmr.rkey = m->mr.rkey;
	return &m->ibmr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/*
 * When this returns, the device copies nothing through the region any more, so the
 * program may unmap its memory; not before (doc/guides/memory.md). EINVAL while a
 * memory window is bound to it.
 */
int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct dpv_context *c = to_ctx(mr->context);
	struct dpv_mr_table *t = c->dev->mrs;
	struct dpv_mr_v *m = to_mr(mr);

	/* Owning the device means no packet is being copied through the region, and no
	 * window is being bound to it. */
	dpv_dev_own(c->dev);
	/* ibv_alloc_mw(3): it fails while a window is bound to the region; EINVAL as rxe
	 * answers (IBTA 10.6.7.2.6). */
	if (m->mr.windows != 0) {
		dpv_dev_disown(c->dev);
		return EINVAL;
	}
	pthread_mutex_lock(&mr_lock);
	dpv_mr_deregister(t, &m->mr);
	unpin(to_full(m));
	pthread_mutex_unlock(&mr_lock);
	dpv_dev_disown(c->dev);
	free(to_full(m));
	return 0;
}

/*
 * Change a registered region in place: its range (IBV_REREG_MR_CHANGE_TRANSLATION,
 * @p addr and @p length), its PD (_CHANGE_PD) and its access (_CHANGE_ACCESS, @p access
 * as ibv_reg_mr(3) takes it). lkey and rkey stay what they were, so keys already handed
 * to peers keep working. The change is made while the device is owned: no packet is
 * being copied through the region, and every later one sees it whole. The range the
 * region ends with, and the access it ends with, pass ibv_reg_mr(3)'s checks; a new
 * range is locked and the old one unlocked.
 * @return 0; IBV_REREG_MR_ERR_INPUT, the region unchanged, with errno EINVAL: unknown
 *         flag bits, @p access without _CHANGE_ACCESS or breaking ibv_reg_mr(3)'s rules,
 *         no @p pd or one of another device, no @p addr or @p length for a new range, or
 *         a new range that wraps; EOPNOTSUPP: @p access asks for what dpverbs does not
 *         offer (dpv_verbs_access_check()), or would make an on-demand region pinned or a
 *         pinned one on demand; ENOMEM: a new range longer than DPV_MAX_MR_SIZE;
 *         EFAULT: the resulting range not mapped with the rights the resulting access
 *         needs. No other error can happen: no command can fail.
 */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	struct dpv_mr_v *m = to_mr(ibmr);
	struct dpv_dev *dev = to_ctx(ibmr->context)->dev;
	unsigned int acc = (unsigned int)access;
	bool translate = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0;
	struct mr_full *f = to_full(m), moved;
	int ret;

	/* A region stays on demand or pinned, as it was registered: moving between the two
	 * is a valid request not offered. */
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) == 0 &&
	    (dpv_verbs_access_check(acc) == EOPNOTSUPP ||
	     ((acc & IBV_ACCESS_ON_DEMAND) != 0) != f->odp)) {
		errno = EOPNOTSUPP;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) != 0 ||
	    (acc != 0 && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
	    ((flags & IBV_REREG_MR_CHANGE_ACCESS) && dpv_verbs_access_check(acc) != 0) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (pd == NULL || pd->context != ibmr->context)) ||
	    (translate && (addr == NULL || length == 0))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((translate || (flags & IBV_REREG_MR_CHANGE_ACCESS)) &&
	    !(f->odp && !translate && ibmr->addr == NULL && ibmr->length == SIZE_MAX)) {
		/* m->mr.access is IBV_ACCESS_* bits too (enum dpv_access has their values). */
		ret = range_check(translate ? addr : ibmr->addr,
				  translate ? length : ibmr->length,
				  ((flags & IBV_REREG_MR_CHANGE_ACCESS) ? acc : m->mr.access) |
				  (f->odp ? IBV_ACCESS_ON_DEMAND : 0));
		if (ret != 0) {
			errno = ret;
			return IBV_REREG_MR_ERR_INPUT;
		}
	}
	dpv_dev_own(dev);
	pthread_mutex_lock(&mr_lock);
	if (translate) {
		/* The new pages are locked, and on the list, before the old are unlocked,
		 * so pages the two ranges share end locked. */
		moved.lock_lo = moved.lock_hi = 0;
		if (!f->odp)
			pin(&moved, addr, length);
		unpin(f);
		if (moved.lock_lo != moved.lock_hi) {
			if (moved.next != NULL)
				moved.next->prev = f;
			locked_list = f;
			f->prev = NULL;
			f->next = moved.next;
		}
		f->lock_lo = moved.lock_lo;
		f->lock_hi = moved.lock_hi;
		m->mr.addr = (uintptr_t)addr;
		m->mr.length = length;
	}
	pthread_mutex_unlock(&mr_lock);
	if (flags & IBV_REREG_MR_CHANGE_PD)
		m->mr.pd = to_pd(pd)->id;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		m->mr.access = dpv_verbs_access_kept(acc);
	dpv_dev_disown(dev);
	if (translate) {
		ibmr->addr = addr;
		ibmr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = pd;
	return 0;
}

/* ---- memory windows (ibv_alloc_mw(3), ibv_bind_mw(3); IBTA 10.6.7) ---- */

struct dpv_mw_v {
	struct ibv_mw ibmw;
	struct dpv_mw mw;             /* in the device's key table */
};

static struct dpv_mw_v *to_mw(struct ibv_mw *m) { return container_of(m, struct dpv_mw_v, ibmw); }

/*
 * A window of @p pd, not bound, with its first key in rkey. EINVAL for a type other
 * than IBV_MW_TYPE_1 and IBV_MW_TYPE_2 (2B: bound to the QP it is bound through); ENOMEM
 * when every key slot holds a region or a window. It counts as a user of the PD.
 */
struct ibv_mw *dpv_verbs_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct dpv_mr_table *t = to_ctx(pd->context)->dev->mrs;
	struct dpv_mw_v *w;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	w->mw.type = (uint8_t)type;
	w->mw.mr.pd = to_pd(pd)->id;
	pthread_mutex_lock(&mr_lock);
	ret = dpv_mw_register(t, &w->mw);
	pthread_mutex_unlock(&mr_lock);
	if (ret != 0) {
		free(w);
		errno = ret;
		return NULL;
	}
	__atomic_add_fetch(&to_pd(pd)->users, 1, __ATOMIC_RELAXED);
	w->ibmw.context = pd->context;
	w->ibmw.pd = pd;
	w->ibmw.rkey = w->mw.mr.rkey;
	w->ibmw.handle = dpv_mr_key_slot(w->mw.mr.rkey);
	w->ibmw.type = type;
	return &w->ibmw;
}

/*
 * ibv_dealloc_mw(3): a bound window is unbound first, so its key is refused from the
 * moment this returns (the device is owned meanwhile: no access through it is under
 * way). A bind of it still queued fails (IBV_WC_MW_BIND_ERR). 0.
 */
int dpv_verbs_dealloc_mw(struct ibv_mw *ibmw)
{
	struct dpv_dev *dev = to_ctx(ibmw->context)->dev;
	struct dpv_mw_v *w = to_mw(ibmw);

	dpv_dev_own(dev);
	pthread_mutex_lock(&mr_lock);
	dpv_mw_deregister(dev->mrs, &w->mw);
	pthread_mutex_unlock(&mr_lock);
	dpv_dev_disown(dev);
	__atomic_sub_fetch(&to_pd(ibmw->pd)->users, 1, __ATOMIC_RELAXED);
	free(w);
	return 0;
}

void dpv_verbs_mw_qp_gone(struct dpv_dev *dev, uint32_t qpn)
{
	pthread_mutex_lock(&mr_lock);
	dpv_mw_unbind_qp(dev->mrs, qpn);
	pthread_mutex_unlock(&mr_lock);
}

/* The access bits a bind may name: a window's remote rights, and local write, which a
 * window has no use for and the suites of rdma-core pass. */
#define MW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		   IBV_ACCESS_REMOTE_ATOMIC)

int dpv_verbs_bind_wqe(const struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info, struct dpv_swqe *w)
{
	/* Zero-based windows (IBV_ACCESS_ZERO_BASED) are not offered, as zero-based
	 * regions are not. */
	if ((info->mw_access_flags & ~(unsigned int)MW_ACCESS) != 0)
		return EINVAL;
	w->opcode = DPV_WR_BIND_MW;
	w->num_sge = 0;
	w->length = 0;
	/* The window is named by its index and generation (bits 31..8); the tag is the
	 * caller's (ibv_inc_rkey(3)). */
	w->rkey = (mw->rkey & ~0xffu) | (rkey & 0xffu);
	w->imm = info->mr != NULL ? info->mr->lkey : 0;
	w->remote_addr = info->addr;
	w->compare_add = info->length;
	w->swap = dpv_verbs_access_kept(info->mw_access_flags) & ~(uint32_t)IBV_ACCESS_LOCAL_WRITE;
	return 0;
}

/*
 * ibv_bind_mw(3), type 1 (the inline wrapper has checked the type, and that the region
 * is of the window's PD: EPERM): the bind is posted to @p qp as a BIND_MW WR with the
 * window's next key (ibv_inc_rkey(3)), which mw->rkey holds when this returns. As mlx5
 * answers at once: EINVAL for a QP that is not RC or UC, access flags a window cannot
 * have, a region without IBV_ACCESS_MW_BIND, remote write or atomic on a region without
 * local write, or a range outside the region; and ibv_post_send(3)'s errors (EINVAL
 * before RTS, ENOMEM for a full SQ). A zero length unbinds the window.
 */
int dpv_verbs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	const struct ibv_mw_bind_info *b = &mw_bind->bind_info;
	struct ibv_send_wr wr, *bad;
	int ret;

	if (qp->qp_type != IBV_QPT_RC && qp->qp_type != IBV_QPT_UC)
		return EINVAL;
	if ((b->mw_access_flags & ~(unsigned int)MW_ACCESS) != 0)
		return EINVAL;
	if (b->mr != NULL && b->length != 0) {
		const struct dpv_mr *m = &to_mr(b->mr)->mr;

		if (!(m->access & DPV_ACCESS_MW_BIND) ||
		    ((b->mw_access_flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		     !(m->access & DPV_ACCESS_LOCAL_WRITE)) ||
		    b->addr < (uintptr_t)b->mr->addr || b->length > b->mr->length ||
		    b->addr - (uintptr_t)b->mr->addr > b->mr->length - b->length)
			return EINVAL;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = *b;
	ret = dpv_verbs_post_send(qp, &wr, &bad);
	if (ret != 0)
		return ret;
	/* ibv_bind_mw(3): the caller keeps the old key, should the bind complete in error. */
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/* ---- ibv_advise_mr(3) ---- */

/*
 * The region of @p pd that key @p lkey names and that holds [addr, addr + length), for
 * ibv_advise_mr(3): EFAULT for a key that names no region of the PD, or a range outside
 * it; EINVAL for a region that is not on demand (prefetching is ODP's); EPERM to
 * prefetch for writing a region registered without local write. Under mr_lock.
 */
static int advise_target(struct ibv_pd *pd, const struct ibv_sge *sge, bool write)
{
	const struct dpv_mr *mr = dpv_mr_find(to_ctx(pd->context)->dev->mrs, sge->lkey);
	const struct mr_full *f;

	if (mr == NULL || mr->pd != to_pd(pd)->id ||
	    sge->addr < mr->addr || sge->length > mr->length ||
	    sge->addr - mr->addr > mr->length - sge->length)
		return EFAULT;
	f = to_full(container_of(mr, struct dpv_mr_v, mr));
	if (!f->odp)
		return EINVAL;
	if (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return EPERM;
	return 0;
}

/*
 * Prefetch parts of on-demand regions. The device copies with the CPU through the
 * program's own page tables, so making pages present to the CPU is making them present
 * to the device: PREFETCH and PREFETCH_WRITE fault them in, readable or writable
 * (madvise(2) MADV_POPULATE_READ / _WRITE, done when the call returns, which is what
 * IBV_ADVISE_MR_FLAG_FLUSH asks), and PREFETCH_NO_FAULT, which presents only the pages
 * already there, has nothing left to do.
 * @return 0; EINVAL: flag bits other than IBV_ADVISE_MR_FLAG_FLUSH, no SGE, or a region
 *         not on demand; EFAULT: a key or range that is no region of @p pd, or pages
 *         that are not mapped (with write access for PREFETCH_WRITE); EPERM:
 *         PREFETCH_WRITE into a region without local write; EOPNOTSUPP: another advice.
 */
int dpv_verbs_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			struct ibv_sge *sg_list, uint32_t num_sge)
{
	const bool write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	int ret = 0;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH && !write &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EOPNOTSUPP;
	if ((flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) != 0 || num_sge == 0 || sg_list == NULL)
		return EINVAL;
	pthread_mutex_lock(&mr_lock);
	for (uint32_t i = 0; i < num_sge && ret == 0; i++)
		ret = advise_target(pd, &sg_list[i], write);
	pthread_mutex_unlock(&mr_lock);
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return ret;
	for (uint32_t i = 0; i < num_sge && ret == 0; i++) {
		uintptr_t lo = page_down((uintptr_t)sg_list[i].addr);
		uintptr_t hi = page_up((uintptr_t)sg_list[i].addr + sg_list[i].length);

		/* Unmapped (ENOMEM) or not populatable with those rights (EFAULT) is the
		 * caller's EFAULT; a kernel before 5.14 knows no MADV_POPULATE_* (EINVAL),
		 * and advice it cannot follow is still advice. */
		if (lo < hi && madvise((void *)lo, hi - lo,
				       write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) != 0 &&
		    (errno == ENOMEM || errno == EFAULT))
			ret = EFAULT;
	}
	return ret;
}
